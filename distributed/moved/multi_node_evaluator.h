// Installed as distributed/multi_node_evaluator.h, where it was before the distributed layer had folders.
#pragma once
#include "distributed/extensions/multi_node_evaluator.h"
