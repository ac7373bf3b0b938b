//! Tests of reachability.
