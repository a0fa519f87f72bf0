# The tests of apps/ link the apps' computation libraries, which exist only when apps are built.
if(TARGET loom_gpu_basics_lib AND TARGET loom_scaling_lib)
  set(_room_links loom_gpu_basics_lib loom_scaling_lib)
else()
  set(_room_skip ON)
endif()
