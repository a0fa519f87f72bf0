# tests/io: the background writer's tests wait on its worker thread, which a bug could leave
# waiting forever; CTest's timeout cuts a hang short. The slowest test here (large headers
# refused cheaply) takes seconds, a sanitizer build tens of times that.
set(_room_timeout 300)
