// Installed as distributed/generic_multi_node_evaluator.h, where it was before the distributed layer had folders.
#pragma once
#include "distributed/extensions/generic_multi_node_evaluator.h"
