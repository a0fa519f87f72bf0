# The tests of loom-catdog run its binary; they exist only when apps are built. Some start runs
# of several thread ranks; CTest's timeout ends a hang (each test takes seconds).
if(TARGET loom_catdog_lib)
  set(_room_links loom_catdog_lib)
else()
  set(_room_skip ON)
endif()
set(_room_timeout 180)
