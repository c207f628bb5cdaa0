// Package benchharness measures bulwark end to end: it generates stacks of N
// resources (flat: independent; chain: each depends on the one before), runs
// the real bulwark binary over them on the mock provider (validate, plan,
// apply from empty, a no-op apply, teardown), measures the floor a step
// cannot go below on this machine (one unary gRPC round trip to a real plugin
// process, one journal append with fsync on the scratch folder's disk), runs
// the same stacks on OpenTofu or Terraform when either is on PATH, and renders
// the figures as a markdown table. Guard checks a run against the maximum
// multiples of the floor recorded in bench/guard.json.
//
// It only measures: it starts bulwark as a user would and reads the files it
// leaves. The driver is cmd/bulwark-bench; `make bench` and
// `make bench-guard` run it.
package benchharness
