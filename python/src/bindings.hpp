#pragma once
// The registration functions of the extension module, one per family (bind_*.cpp).

#include <nanobind/nanobind.h>

namespace simkit::python {

void bind_compute(nanobind::module_& m);     // pairwise, knn, gauss
void bind_clustering(nanobind::module_& m);  // kmeans, kcenter
void bind_primitives(nanobind::module_& m);  // scan, segmented scan, sort, merge, select_k, spmv
void bind_index(nanobind::module_& m);       // Index
void bind_nbody(nanobind::module_& m);       // nbody accel, initial conditions, diagnostics, leapfrog

}  // namespace simkit::python
