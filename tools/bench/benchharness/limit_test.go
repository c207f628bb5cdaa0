package benchharness

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestLimit(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		shape       Shape
		n           int
		command     string
		latency     time.Duration
		parallelism int
		want        time.Duration
	}{
		// One L of reads, 20 waves of 10 writes, the last wave's verify.
		{Flat, 200, CmdApply, 200 * ms, 10, 200*ms + 20*200*ms + 200*ms}, // 4.4 s
		{Flat, 200, CmdApply, 200 * ms, 50, 200*ms + 4*200*ms + 200*ms},  // 1.2 s
		{Flat, 200, CmdApply, 50 * ms, 10, 50*ms + 20*50*ms + 50*ms},     // 1.1 s
		{Flat, 200, CmdTeardown, 200 * ms, 10, 4400 * ms},                // the same graph backwards
		{Flat, 1, CmdApply, time.Second, 10, 3 * time.Second},            // read, create, verify
		{Flat, 0, CmdApply, time.Second, 10, time.Second},                // the reads' L alone
		// A chain: in an apply each write waits for the one before to be
		// written (an ephemeral create starts early), the last one's
		// verify after it; in a teardown each delete waits for the one
		// before to be deleted (an ephemeral delete starts early too).
		{Chain, 3, CmdApply, 100 * ms, 10, 100*ms + 3*100*ms + 100*ms},
		{Chain, 3, CmdTeardown, 100 * ms, 10, 100*ms + 3*100*ms + 100*ms},
		// 10 layers of 2, each resource waiting for both of the layer
		// before: a layer every L, the last one's verify after it (a
		// teardown too: it deletes early).
		{Layers, 20, CmdApply, 50 * ms, 10, 50*ms + 10*50*ms + 50*ms}, // 0.6 s
		{Layers, 20, CmdTeardown, 50 * ms, 10, 50*ms + 10*50*ms + 50*ms},
		// 10 layers of 4 at P 2: a layer every 2 ticks (2k, 2k+1), the
		// next ready at 2k+2; layer 9 last written at tick 19, verified
		// at 21.
		{Layers, 40, CmdApply, 100 * ms, 2, 22 * 100 * ms},
		// Wide enough that P binds nowhere: one L per layer.
		{Layers, 200, CmdApply, 200 * ms, 1000, 200*ms + 10*200*ms + 200*ms},
		// The latency rows' layers: 10 × 20. At P 10 the slots bind (20
		// waves, each layer two); at P 50 only the path does (1 per
		// layer).
		{Layers, 200, CmdApply, 200 * ms, 10, 4400 * ms},
		{Layers, 200, CmdApply, 200 * ms, 50, 2400 * ms},
		{Layers, 200, CmdTeardown, 50 * ms, 10, 1100 * ms},
		{Layers, 200, CmdTeardown, 200 * ms, 50, 2400 * ms}, // deletes start early: 1 L per layer (was 4.2 s, 2 L)
		{Flat, 10, "plan", time.Second, 10, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s-%d-%s-L%s-P%d", tt.shape, tt.n, tt.command, tt.latency, tt.parallelism), func(t *testing.T) {
			if got := Limit(ShapeGraph(tt.shape, tt.n), tt.command, tt.latency, tt.parallelism); got != tt.want {
				t.Errorf("Limit = %s, want %s", got, tt.want)
			}
		})
	}
}

// The schedule is never shorter than its two lower bounds (the writes
// spread over P slots, plus the last verify; two ticks per layer of the
// longest path), and for the graphs the latency rows use, it is close to
// the larger one.
func TestTicksBounds(t *testing.T) {
	for _, shape := range AllShapes {
		for _, n := range []int{1, 7, 20, 200, 1000} {
			for _, p := range []int{1, 3, 10, 50} {
				g := ShapeGraph(shape, n)
				got := Ticks(g, p)
				work := (n+p-1)/p + 1
				path := 2 * depth(g)
				if got < max(work, path) {
					t.Errorf("%s %d P%d: %d ticks, below the bound %d", shape, n, p, got, max(work, path))
				}
				if got > work+path {
					t.Errorf("%s %d P%d: %d ticks, above work + path %d: a slot was left idle", shape, n, p, got, work+path)
				}
			}
		}
	}
}

// The early schedule (dependents ready once written) is bounded the same
// way, with one tick per resource of the longest path and the last
// verify's, and is never longer than the schedule that waits for verified.
func TestEarlyTicksBounds(t *testing.T) {
	for _, shape := range AllShapes {
		for _, n := range []int{1, 7, 20, 200, 1000} {
			for _, p := range []int{1, 3, 10, 50} {
				g := ShapeGraph(shape, n)
				got := EarlyTicks(g, p)
				work := (n+p-1)/p + 1
				path := depth(g) + 1
				if got < max(work, path) {
					t.Errorf("%s %d P%d: %d ticks, below the bound %d", shape, n, p, got, max(work, path))
				}
				if got > work+path {
					t.Errorf("%s %d P%d: %d ticks, above work + path %d: a slot was left idle", shape, n, p, got, work+path)
				}
				if v := Ticks(g, p); got > v {
					t.Errorf("%s %d P%d: %d ticks starting early, %d waiting for verified", shape, n, p, got, v)
				}
			}
		}
	}
}

// depth is the number of resources on g's longest path.
func depth(g Graph) int {
	d := make([]int, len(g))
	most := 0
	for i, ds := range g {
		d[i] = 1
		for _, x := range ds {
			d[i] = max(d[i], d[x]+1)
		}
		most = max(most, d[i])
	}
	return most
}

func TestReversed(t *testing.T) {
	g := ShapeGraph(Layers, 40)
	r := g.reversed()
	edges := func(g Graph) [][2]int {
		var out [][2]int
		for i, ds := range g {
			for _, d := range ds {
				if d >= i {
					t.Errorf("%d depends on %d: not in topological order", i, d)
				}
				out = append(out, [2]int{i, d})
			}
		}
		return out
	}
	var back [][2]int
	for _, e := range edges(r) {
		// r's i waits for d: in g, n-1-d depends on n-1-i.
		back = append(back, [2]int{len(g) - 1 - e[1], len(g) - 1 - e[0]})
	}
	want := edges(g)
	slices.SortFunc(back, func(a, b [2]int) int { return (a[0]-b[0])*1000 + a[1] - b[1] })
	slices.SortFunc(want, func(a, b [2]int) int { return (a[0]-b[0])*1000 + a[1] - b[1] })
	if !slices.Equal(back, want) {
		t.Errorf("reversed twice is not the graph:\n%v\n%v", back, want)
	}
}

func TestTicksRefusesACycle(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic on a cycle")
		}
	}()
	Ticks(Graph{{1}, {0}}, 1)
}

func TestRateLimitBound(t *testing.T) {
	if got := RateLimitBound(1000, 50); got != 20*time.Second {
		t.Errorf("RateLimitBound(1000, 50) = %s, want 20s", got)
	}
}

func TestRollbackLimit(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name        string
		shape       Shape
		n, failing  int
		parallelism int
		wantFail    int // ticks from the first write until the failing Create returns
		wantUndo    int // ticks of the undo
	}{
		// The row: the last of 200 fails in the 20th wave of 10;
		// 199 deletes in waves of 10.
		{"flat last", Flat, 200, 199, 10, 20, 20},
		// The first fails in the first wave: its 9 neighbours are undone.
		{"flat first", Flat, 200, 0, 10, 1, 1},
		{"flat one", Flat, 1, 0, 10, 1, 0},
		// A chain writes every tick (its creates start early): the third
		// is written at tick 2; the two before are undone one after the
		// other.
		{"chain", Chain, 3, 2, 10, 3, 2},
		// 10 layers of 2: layer k written at tick k; the last resource
		// fails at 10; 19 created, undone a layer (2 deletes) a tick, the
		// failing one's neighbour alone first.
		{"layers", Layers, 20, 19, 10, 10, 10},
		// Writes in flight when the failure is known are undone too.
		{"flat wave", Flat, 30, 12, 10, 2, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := ShapeGraph(tc.shape, tc.n)
			fail, undo := RollbackTicks(g, tc.failing, tc.parallelism)
			if fail != tc.wantFail || undo != tc.wantUndo {
				t.Fatalf("RollbackTicks = %d, %d; want %d, %d", fail, undo, tc.wantFail, tc.wantUndo)
			}
			want := time.Duration(1+tc.wantFail+tc.wantUndo) * 50 * ms
			if got := RollbackLimit(g, tc.failing, 50*ms, tc.parallelism); got != want {
				t.Fatalf("RollbackLimit = %s, want %s", got, want)
			}
		})
	}
	t.Run("flat 200 at 50 ms, P 10", func(t *testing.T) {
		if got := RollbackLimit(ShapeGraph(Flat, 200), 199, 50*ms, 10); got != 2050*ms {
			t.Fatalf("got %s, want 2.05 s (one L of reads, 20 waves of creates, 20 of deletes)", got)
		}
	})
}
