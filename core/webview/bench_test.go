package webview_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bulwark-iac/bulwark/core/inspect"
	"github.com/bulwark-iac/bulwark/core/journal"
	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/state"
	"github.com/bulwark-iac/bulwark/core/webview"
)

// memSource is a Source held in memory, for measuring the rendering alone
// (reading a backend is measured by the storage benchmarks).
type memSource struct {
	stacks []string
	status *inspect.StatusReport
	res    []*state.Resource
	ops    []journal.Record
	spec   *webview.RecordedSpec
}

func (m *memSource) Stacks(context.Context) ([]string, error) { return m.stacks, nil }
func (m *memSource) Status(context.Context, string) (*inspect.StatusReport, error) {
	return m.status, nil
}
func (m *memSource) Resources(_ context.Context, name string) ([]*state.Resource, error) {
	if m.status != nil && name != m.status.Stack {
		// The other stacks the stack page compares ids with (conflicts)
		// record nothing here.
		return nil, nil
	}
	return m.res, nil
}
func (m *memSource) History(context.Context, string) (*inspect.HistoryReport, error) {
	return &inspect.HistoryReport{Stack: "big"}, nil
}
func (m *memSource) Operation(context.Context, string, string) ([]journal.Record, []string, error) {
	return m.ops, nil, nil
}

func (m *memSource) Spec(context.Context, string) (*webview.RecordedSpec, error) {
	return m.spec, nil
}

func bigSource(n int) *memSource {
	m := &memSource{status: &inspect.StatusReport{Stack: "big", Revision: 3}}
	for i := range 20 {
		m.stacks = append(m.stacks, fmt.Sprintf("stack-%02d", i))
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.ops = append(m.ops, journal.Record{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpRunning, Time: t0})
	for i := range n {
		name := fmt.Sprintf("res_%04d", i)
		m.res = append(m.res, &state.Resource{Name: name, Type: "generic", Provider: "mock", ID: "mock-" + name,
			Protection: protection.Level(i % 3), CreatedBy: "op_1"})
		m.status.Resources = append(m.status.Resources, inspect.StatusResource{Name: name})
		at := t0.Add(time.Duration(i) * time.Millisecond)
		for j, ph := range []string{"check", "execute", "verify"} {
			s := at.Add(time.Duration(j) * 10 * time.Millisecond)
			m.ops = append(m.ops,
				journal.Record{Op: "op_1", Kind: journal.KindStep, Step: "create:" + name, Resource: name, Action: "create", Phase: ph, Status: journal.StepStarted, Time: s},
				journal.Record{Op: "op_1", Kind: journal.KindStep, Step: "create:" + name, Resource: name, Action: "create", Phase: ph, Status: journal.StepOK, Time: s.Add(5 * time.Millisecond)})
		}
	}
	m.ops = append(m.ops, journal.Record{Op: "op_1", Kind: journal.KindOp, Type: "apply", Status: journal.OpSucceeded, Time: t0.Add(time.Duration(n+40) * time.Millisecond)})
	return m
}

func benchPage(b *testing.B, path string) {
	h := webview.New(bigSource(1000), webview.Options{Graphviz: testGraphviz})
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1:8080"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
	}
}

func BenchmarkStacksList(b *testing.B)        { benchPage(b, "/") }
func BenchmarkStackPage1000(b *testing.B)     { benchPage(b, "/stacks/big") }
func BenchmarkTimeline1000Steps(b *testing.B) { benchPage(b, "/stacks/big/operations/op_1") }
func BenchmarkStackPage1000JSON(b *testing.B) { benchPage(b, "/api/stacks/big") }
