/// @file
/// The training loop: Trainer, updaters, triggers, the standard extensions, and metrics of
/// sequence predictions (BLEU, error rates).
#pragma once

#include "training/extension.h"
#include "training/extensions/dump_graph.h"
#include "training/extensions/evaluator.h"
#include "training/extensions/exponential_shift.h"
#include "training/extensions/linear_shift.h"
#include "training/extensions/log_report.h"
#include "training/extensions/plot_figure.h"
#include "training/extensions/plot_report.h"
#include "training/extensions/print_report.h"
#include "training/extensions/progress_bar.h"
#include "training/extensions/snapshot.h"
#include "training/extensions/value_observation.h"
#include "training/metrics/bleu.h"
#include "training/metrics/error_rate.h"
#include "training/trainer.h"
#include "training/trigger.h"
#include "training/triggers/early_stopping_trigger.h"
#include "training/triggers/manual_schedule_trigger.h"
#include "training/triggers/minmax_value_trigger.h"
#include "training/updater.h"
