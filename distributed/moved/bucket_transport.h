// Installed as distributed/bucket_transport.h, where it was before the distributed layer had folders.
#pragma once
#include "distributed/reducer/bucket_transport.h"
