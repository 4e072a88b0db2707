#pragma once
// Everything public, in one include.
#include <simkit/array.hpp>
#include <simkit/context.hpp>
#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/gauss.hpp>
#include <simkit/index.hpp>
#include <simkit/io.hpp>
#include <simkit/kmeans.hpp>
#include <simkit/knn.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>
#include <simkit/nbody.hpp>
#include <simkit/pairwise.hpp>
#include <simkit/primitives.hpp>
#include <simkit/radius.hpp>
#include <simkit/tree.hpp>
