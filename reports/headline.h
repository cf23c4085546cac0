// What a run is judged by: for each axis whose workload ran, the steady-window figures
// of that axis; the setup-window figures (registration, population ramps, the
// bytes-per-object fit) apart from them; the load per kube-apiserver replica; and how
// the controllers kept up.
// summary.md, report.html and `cpscale compare` all take their headline from here so
// they never disagree on which figures a verdict rests on.
#pragma once

#include <string>
#include <vector>

#include "reports/format.h"
#include "sim/result/result.h"

namespace cpscale::reports {

// The axes of the workloads that ran, as their kinds declare them (kubelets -> node-bound,
// churn -> churn-bound, dormant -> state-bound), in kAllAxes order; all three for a result that names no
// workload of a known kind (an older or hand-made result: better too much than nothing).
std::vector<Axis> axesOfRun(const result::RunResult& r);

// Figures in reading order; per-resource listings are capped (the largest first) so
// the headline stays short enough for a CI log, `omitted` counting what was left out.
struct AxisFigures {
  std::vector<const metrics::Figure*> figures;
  std::size_t omitted = 0;
};

// The steady-window figures an axis is judged by. Per-resource write rates of 0 are
// left out: a resource nobody wrote says nothing about the axis. The node-bound axis
// also shows the node fleet's own whole-run figures: how often nodes went NotReady and
// Ready again, and how long the control plane took to see it.
AxisFigures axisFigures(std::span<const metrics::Figure> figures, Axis axis, std::size_t maxPerResource = 6);

struct AxisHeadline {
  Axis axis;
  AxisFigures figures;  // steady window (and the node fleet's whole-run figures)
};

// One workqueue of a controller process over the steady window.
struct WorkqueueRow {
  std::string component;  // kube-controller-manager, kube-scheduler
  std::string queue;
  const metrics::Figure* depthMax = nullptr;  // workqueue_depth_max; null when not in the result
  const metrics::Figure* adds = nullptr;      // workqueue_adds; likewise
};

// How the controllers behind the load kept up (steady window): per component the
// deepest workqueue and the items added, the node lifecycle controller's evictions and
// not-Ready nodes, the scheduler's pending pods and attempts; and the workqueues that
// got deepest (then took the most items). Empty unless a kube-controller-manager or
// kube-scheduler figure was measured: a user's cluster rarely exposes them.
struct ControllersHeadline {
  std::vector<const metrics::Figure*> figures;
  std::vector<WorkqueueRow> workqueues;
  std::size_t omittedWorkqueues = 0;
  bool empty() const { return figures.empty() && workqueues.empty(); }
};

ControllersHeadline controllersHeadline(std::span<const metrics::Figure> figures, std::size_t maxWorkqueues = 6);

struct Headline {
  // Every write that reached storage and every write the apiserver refused (steady).
  std::vector<const metrics::Figure*> writes;
  std::vector<AxisHeadline> axes;  // the axes of the run, in kAllAxes order
  // Setup-window figures of those axes: registration write rates, population ramps,
  // bytes_per_object fits (their confidence interval and r² are read with
  // bytesPerObjectDetail, not listed as rows of their own).
  AxisFigures setup;
  // The kube-apiservers that reported figures, when there is more than one: the
  // per-replica load table is only worth a look then.
  std::vector<std::string> replicas;
  ControllersHeadline controllers;
};

Headline headline(const result::RunResult& r, std::size_t maxPerResource = 6);

// A replica's figure for the load table: the steady window's, else the whole run's.
const metrics::Figure* replicaFigure(const result::RunResult& r, std::string_view name, const std::string& apiserver);

// The columns of the per-replica load table: (figure name, column title) for request
// rate, write rate, heap in use and RSS, leaving out those no replica has a figure for.
std::vector<std::pair<std::string, std::string>> replicaColumns(const result::RunResult& r,
                                                                const std::vector<std::string>& replicas);

// Every figure of the headline (writes, axes, setup, controllers), for `cpscale compare`.
std::vector<const metrics::Figure*> headlineFigures(const Headline& h);

// "(3.2–3.6 KiB, r² 0.98)": the confidence interval and fit quality of a
// bytes_per_object figure whose companions are in `figures` (same labels, same
// window); "" otherwise.
std::string bytesPerObjectDetail(std::span<const metrics::Figure> figures, const metrics::Figure& f);

// The first figure with this name and exactly these labels in this window, or null.
const metrics::Figure* findExact(std::span<const metrics::Figure> figures, std::string_view name,
                                 const metrics::Labels& labels, metrics::Window window = metrics::Window::kSteady);

// Every figure grouped by name, in the order the result first lists each name, and
// within a name steady, then setup, then whole-run: the same figure measured over
// setup sits right under its steady self, never in the same row.
std::vector<const metrics::Figure*> groupedFigures(const std::vector<metrics::Figure>& figures);

// A phase's span for a reader: "0s to 1m25s (1m25s)".
std::string formatSpan(const result::Phase& p);

// One line per phase and incident, for the top of summary.md and report.html: what a
// reader must know before trusting a single figure (setup cut short, a member died).
std::vector<std::string> phaseLines(const result::RunResult& r);
std::string incidentLine(const result::Incident& i);

}  // namespace cpscale::reports
