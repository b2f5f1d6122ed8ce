// Installed as distributed/shared_memory_transport.h, where it was before the distributed layer had folders.
#pragma once
#include "distributed/reducer/shared_memory_transport.h"
