package tfplugin

import (
	"container/list"
	"sync"
)

// maxRemembered bounds the plans an Adapter holds for the applies that are
// to take them (see plans).
const maxRemembered = 4096

// plans are the provider's plans of a change that a Read made (the plan
// the host's Check shows for an update), kept for the apply of that very
// change: an Update whose request is byte for byte the one planned (same
// provider configuration, type and schema version, prior state, private
// data, wholly known config) applies the remembered PlannedState and
// PlannedPrivate instead of asking the provider to plan the same thing a
// second time. The provider still sees a plan, then an apply of what it
// planned, as Terraform gives it.
//
// Each plan is taken once. Only plans an apply can take are put (ones
// that change something in place: a plan of no change is never applied,
// and a replace's create plans from no prior state), and at most max
// (maxRemembered when 0) are held, the oldest dropped first, so that a
// plan of many resources whose applies never come (a `plan`, a change
// that fails its check) holds a bounded number. A plan not found is made
// again: memory here saves a call, it never decides anything.
type plans struct {
	mu    sync.Mutex
	max   int
	byKey map[string]*list.Element
	order list.List // of *rememberedPlan, oldest first
}

type rememberedPlan struct {
	key  string
	plan *PlanResourceChangeResponse
}

// put remembers p under key (one plan per key: the newest).
func (m *plans) put(key string, p *PlanResourceChangeResponse) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byKey == nil {
		m.byKey = map[string]*list.Element{}
	}
	if el, ok := m.byKey[key]; ok {
		m.order.Remove(el)
	}
	m.byKey[key] = m.order.PushBack(&rememberedPlan{key: key, plan: p})
	limit := m.max
	if limit <= 0 {
		limit = maxRemembered
	}
	for m.order.Len() > limit {
		oldest := m.order.Front()
		delete(m.byKey, oldest.Value.(*rememberedPlan).key)
		m.order.Remove(oldest)
	}
}

// take answers the plan remembered under key and forgets it.
func (m *plans) take(key string) (*PlanResourceChangeResponse, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byKey[key]
	if !ok {
		return nil, false
	}
	delete(m.byKey, key)
	m.order.Remove(el)
	return el.Value.(*rememberedPlan).plan, true
}

// len is how many plans are held.
func (m *plans) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len()
}
