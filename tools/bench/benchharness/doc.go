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
// RunLatency measures what the standard table cannot: bulwark when every
// provider call takes real time. It applies and tears down flat and Layers
// stacks on the mock with latency_ms L, at --parallelism P, on the batching
// mock and on the mock with its batch calls hidden (BULWARK_MOCK_BATCH=off,
// as real providers are), Terraform and OpenTofu beside it (each resource a
// terraform_data with a `sleep L` provisioner) in interleaved runs, and
// shows each figure against its limit (Limit): the time an ideal,
// overhead-free engine would take for that graph at that L and P. One L of
// reads before the first write (bulwark refuses a plan whole before its
// first step, so every resource is read before any is written; a teardown
// reads what it deletes, for the ownership check, before its first
// delete); then one write per resource (Create, or Delete in a teardown)
// taking L in one of P write slots, and Verify's read taking L after it, off
// the write slots; in an apply a resource is ready once what it depends on
// is written (bulwark starts an ephemeral create, policy compensate, early:
// see engine.Step.EarlyStart), in a teardown once what depends on it is
// deleted, its Delete returned (bulwark deletes an ephemeral resource
// early: see engine.Step.EarlyDelete); ready resources fill free slots in
// topological order. Limit simulates that list
// schedule, exact for these graphs. A rate-limited row (the mock's
// rate_limit R, N resources) is held against N ÷ R seconds instead.
//
// It only measures: it starts bulwark as a user would and reads the files it
// leaves. The driver is cmd/bulwark-bench; `make bench` and
// `make bench-guard` run it.
package benchharness
