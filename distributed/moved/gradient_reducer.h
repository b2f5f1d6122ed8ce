// Installed as distributed/gradient_reducer.h, where it was before the distributed layer had folders.
#pragma once
#include "distributed/reducer/gradient_reducer.h"
