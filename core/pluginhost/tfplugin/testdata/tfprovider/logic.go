package main

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sync"

	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// diag is a diagnostic of either protocol.
type diag struct {
	warning bool
	summary string
	path    *tftypes.AttributePath
}

// provider is the logic both protocols share, on tftypes values.
type provider struct {
	mu     sync.Mutex
	prefix string
	next   int
	world  map[string]tftypes.Value // by id
}

func newProvider() *provider { return &provider{world: map[string]tftypes.Value{}} }

var ruleType = tftypes.Object{AttributeTypes: map[string]tftypes.Type{"port": tftypes.Number, "proto": tftypes.String}}

func obj(v tftypes.Value) map[string]tftypes.Value {
	m := map[string]tftypes.Value{}
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	if err := v.As(&m); err != nil {
		panic(err)
	}
	return m
}

func str(v tftypes.Value) (string, bool) {
	if v.IsNull() || !v.IsKnown() {
		return "", false
	}
	var s string
	if err := v.As(&s); err != nil {
		panic(err)
	}
	return s, true
}

func num(v tftypes.Value) (*big.Float, bool) {
	if v.IsNull() || !v.IsKnown() {
		return nil, false
	}
	f := new(big.Float)
	if err := v.As(&f); err != nil {
		panic(err)
	}
	return f, true
}

func (p *provider) validateProvider(cfg tftypes.Value) []diag {
	if s, ok := str(obj(cfg)["prefix"]); ok && s == "bad" {
		return []diag{{summary: "prefix must not be bad", path: tftypes.NewAttributePath().WithAttributeName("prefix")}}
	}
	return nil
}

func (p *provider) configure(cfg tftypes.Value) []diag {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prefix, _ = str(obj(cfg)["prefix"])
	return nil
}

func (p *provider) validateThing(cfg tftypes.Value) []diag {
	m := obj(cfg)
	var out []diag
	if f, ok := num(m["size"]); ok && f.Sign() < 0 {
		out = append(out, diag{summary: "size must not be negative", path: tftypes.NewAttributePath().WithAttributeName("size")})
	}
	if r := m["rule"]; r.IsKnown() && !r.IsNull() {
		var rules []tftypes.Value
		if err := r.As(&rules); err != nil {
			panic(err)
		}
		for i, rule := range rules {
			if f, ok := num(obj(rule)["port"]); ok && f.Sign() <= 0 {
				out = append(out, diag{summary: "port must be positive",
					path: tftypes.NewAttributePath().WithAttributeName("rule").WithElementKeyInt(i).WithAttributeName("port")})
			}
		}
	}
	if s, ok := str(m["secret"]); ok && s != "" {
		out = append(out, diag{warning: true, summary: "secret is stored in the state"})
	}
	return out
}

// plan plans a change of tftest_thing: the id is unknown until a create,
// name forces a replacement, a rule's proto defaults to tcp.
func (p *provider) plan(ty tftypes.Type, prior, proposed tftypes.Value) (tftypes.Value, []*tftypes.AttributePath) {
	if proposed.IsNull() {
		return tftypes.NewValue(ty, nil), nil
	}
	m := obj(proposed)
	var replace []*tftypes.AttributePath
	pm := obj(prior)
	switch {
	case pm == nil:
		m["id"] = tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	case !pm["name"].Equal(m["name"]):
		replace = append(replace, tftypes.NewAttributePath().WithAttributeName("name"))
		m["id"] = tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	default:
		m["id"] = pm["id"]
	}
	if r := m["rule"]; r.IsKnown() && !r.IsNull() {
		var rules []tftypes.Value
		if err := r.As(&rules); err != nil {
			panic(err)
		}
		for i, rule := range rules {
			rm := obj(rule)
			if rm["proto"].IsNull() {
				rm["proto"] = tftypes.NewValue(tftypes.String, "tcp")
			}
			rules[i] = tftypes.NewValue(ruleType, rm)
		}
		m["rule"] = tftypes.NewValue(tftypes.List{ElementType: ruleType}, rules)
	}
	return tftypes.NewValue(ty, m), replace
}

func (p *provider) apply(ty tftypes.Type, prior, planned tftypes.Value) (tftypes.Value, []byte, []diag) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if planned.IsNull() {
		id, _ := str(obj(prior)["id"])
		delete(p.world, id)
		return tftypes.NewValue(ty, nil), nil, nil
	}
	m := obj(planned)
	if !m["id"].IsKnown() {
		p.next++
		m["id"] = tftypes.NewValue(tftypes.String, fmt.Sprintf("thing-%d", p.next))
	}
	if name, _ := str(m["name"]); name == "fail-halfway" {
		// Made, then failed: the state says it exists.
		v := tftypes.NewValue(ty, m)
		id, _ := str(m["id"])
		p.world[id] = v
		return v, []byte("private:" + id), []diag{{summary: "failed after creating " + id}}
	}
	v := tftypes.NewValue(ty, m)
	id, _ := str(m["id"])
	p.world[id] = v
	return v, []byte("private:" + id), nil
}

func (p *provider) read(ty tftypes.Type, cur tftypes.Value, private []byte) (tftypes.Value, []byte, []diag) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, _ := str(obj(cur)["id"])
	v, ok := p.world[id]
	if !ok {
		return tftypes.NewValue(ty, nil), nil, nil
	}
	if len(private) > 0 && string(private) != "private:"+id {
		return v, private, []diag{{summary: fmt.Sprintf("private data %q is not this resource's", private)}}
	}
	return v, private, nil
}

// importState answers a partial state: only the id, as providers do; a
// read fills in the rest.
func (p *provider) importState(ty tftypes.Type, id string) (tftypes.Value, []diag) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.world[id]; !ok {
		return tftypes.Value{}, []diag{{summary: "no thing " + id}}
	}
	m := map[string]tftypes.Value{}
	for name, aty := range ty.(tftypes.Object).AttributeTypes {
		m[name] = tftypes.NewValue(aty, nil)
	}
	m["id"] = tftypes.NewValue(tftypes.String, id)
	return tftypes.NewValue(ty, m), nil
}

// upgradeJSON brings a stored state to schema version 1: version 0 kept
// size as a string.
func upgradeJSON(version int64, raw []byte) ([]byte, []diag) {
	if version >= 1 {
		return raw, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, []diag{{summary: "state: " + err.Error()}}
	}
	if s, ok := m["size"].(string); ok {
		var f float64
		if _, err := fmt.Sscan(s, &f); err != nil {
			return nil, []diag{{summary: "size: " + err.Error()}}
		}
		m["size"] = f
	}
	out, _ := json.Marshal(m)
	return out, nil
}

func (p *provider) readEcho(ty tftypes.Type, cfg tftypes.Value) tftypes.Value {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := obj(cfg)
	in, _ := str(m["input"])
	m["output"] = tftypes.NewValue(tftypes.String, p.prefix+in)
	return tftypes.NewValue(ty, m)
}
