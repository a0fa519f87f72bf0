// A header of the user's own project that shares a name with loom's src/data/dataset.h: with
// every loom include spelled <loom/...>, both can be on one include path.
#pragma once

namespace user_project {

inline int dataset_marker() { return 42; }

}  // namespace user_project
