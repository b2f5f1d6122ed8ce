// Installed as distributed/multi_node_optimizer.h, where it was before the distributed layer had folders.
#pragma once
#include "distributed/optimizers/multi_node_optimizer.h"
