// Installed as distributed/shared_update.h, where it was before the distributed layer had folders.
#pragma once
#include "distributed/optimizers/shared_update.h"
