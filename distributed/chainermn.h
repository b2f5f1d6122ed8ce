// Everything of the distributed layer in one include: the MPI job (init_mpi, run_main,
// abort_job), communicators (create_communicator, naive, flat) and the object serialization.
#pragma once
#include "distributed/communicator.h"
#include "distributed/flat_communicator.h"
#include "distributed/mpi_check.h"
#include "distributed/mpi_runtime.h"
#include "distributed/naive_communicator.h"
#include "distributed/object_reduction.h"
#include "distributed/object_serialization.h"
#include "distributed/topology.h"
