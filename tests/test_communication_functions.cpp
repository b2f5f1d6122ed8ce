// Placeholder: filled in by the model-parallel work (issue 14).
#include <catch2/catch.hpp>
