# The tests of loom-catdog run its binary; they exist only when apps are built.
if(TARGET loom_catdog_lib)
  set(_room_links loom_catdog_lib)
else()
  set(_room_skip ON)
endif()
