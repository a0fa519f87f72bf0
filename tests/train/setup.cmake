# tests/train: the multi-rank fit tests run thread ranks that a bug could leave waiting on each
# other; the group's own timeout is minutes, so CTest's cuts a hang short first.
set(_room_timeout 180)
