// Installed as distributed/scatter_dataset.h, where it was before the distributed layer had folders.
#pragma once
#include "distributed/datasets/scatter_dataset.h"
