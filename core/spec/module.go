package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"gopkg.in/yaml.v3"

	"github.com/bulwark-iac/bulwark/core/protection"
	"github.com/bulwark-iac/bulwark/core/value"
)

// ModuleFile is the file a module's folder holds: one spec fragment with
// variables:, locals:, resources:, data: and outputs:. One fixed name (as
// Terraform reads every *.tf of a folder, but bulwark's stack is one file
// too) keeps a module's problems in one file and leaves the folder free for
// what the module ships beside it (a README, examples, a versions file
// later).
const ModuleFile = "module.yaml"

// ModuleCall is one entry under modules:, a module instantiated under the
// call's name: its resource NAME becomes CALL.NAME, its data NAME
// CALL.NAME, its variables and locals locals named CALL.var.NAME and
// CALL.local.NAME; ${module.CALL.OUTPUT} in the caller is the output's
// value.
type ModuleCall struct {
	Name string
	// Source is the module's folder as written: a local path relative to
	// the calling file (./modules/network, ../shared/net).
	Source string
	// Dir is the folder Source names, joined to the calling file's.
	Dir string
	// Inputs are the values of the module's variables, as config values
	// (a *Template where they use variables or locals).
	Inputs map[string]any
	// Protection raises every resource of the module to at least this
	// level; Unspecified when absent.
	Protection protection.Level
	// Instances are the call's instances when it has for_each or count,
	// in order (nil without either): for_each makes one per key, named
	// CALL["KEY"], count one per index, CALL[N], as Terraform addresses
	// module.CALL["KEY"] and module.CALL[N].
	Instances []CallInstance
	// Repeated reports that for_each or count was written (Instances may
	// then be empty: count: 0).
	Repeated bool
	// RepeatExpr is the for_each or count when it is an expression over
	// variables and locals (for_each: ${var.regions}); nil when written
	// in the spec. Its instances are decided once the variables have
	// values (resolve.Expand gives them to WithCallInstances).
	RepeatExpr *Template
	// Pending reports that RepeatExpr's instances are not decided yet:
	// the module is instantiated once, under the call's name, with
	// each.key, each.value and count.index unknown (validate without
	// values), never planned.
	Pending bool
	// File is the module file a call made inside a module is written in,
	// and Via the calls that led there (callProblem's), for a pending
	// call of a module instantiated in the stack (Spec.PendingCalls,
	// named CALL.INNER, CALL["KEY"].INNER ...); "" for the stack's own.
	File, Via string
	Pos       Pos            // of the call's "- name:" mapping
	FieldPos  map[string]Pos // of each field's value, and of each input as "inputs.KEY"
}

// CallInstance is one instance of a call with for_each or count.
type CallInstance struct {
	// Key is the for_each key, or the count index in decimal.
	Key string
	// Value is each.value (the key again for a list); nil for count.
	Value any
	// Count reports that the instance is a count's: ${count.index} is
	// Index, and the instance is named CALL[N].
	Count bool
	Index int
}

// instanceName returns the name the instance's resources are under:
// CALL["KEY"] or CALL[N].
func (c *ModuleCall) instanceName(in CallInstance) string {
	if in.Count {
		return c.Name + "[" + strconv.Itoa(in.Index) + "]"
	}
	return c.Name + `["` + in.Key + `"]`
}

// maxModuleEntries bounds the resources and data entries the calls of one
// spec or module make, nested calls multiplied out: a call with count
// 10000 of a module whose own call has count 10000 is refused rather than
// filling memory.
const maxModuleEntries = 50000

// maxCallInstances bounds the instances of one call, so that a typo
// (count: 1e9) is refused rather than filling memory.
const maxCallInstances = 10000

var callFields = []string{"name", "source", "inputs", "protection", "for_each", "count"}

// callNodes is a call being parsed, with its inputs' references and
// those of a for_each or count written as an expression.
type callNodes struct {
	c      *ModuleCall
	refs   *tmplCtx
	repeat *tmplCtx
}

// modules walks the modules: list.
func (p *parser) modules(s *Spec, v *yaml.Node) {
	if isNull(v) {
		return
	}
	if v.Kind != yaml.SequenceNode {
		p.addf(v, "modules must be a list of module calls ({name, source, inputs}), not %s", describe(v))
		return
	}
	seen := map[string]*ModuleCall{}
	for i, item := range v.Content {
		if p.skip[item] {
			continue
		}
		if item.Kind != yaml.MappingNode {
			p.addf(item, "module call #%d must be a mapping, not %s", i+1, describe(item))
			continue
		}
		c := &ModuleCall{Pos: posOf(item), FieldPos: map[string]Pos{}, Inputs: map[string]any{}}
		cn := &callNodes{c: c, refs: &tmplCtx{where: "a module's inputs"}}
		label := fmt.Sprintf("module call #%d", i+1)
		if nv := fieldNode(item, "name"); nv != nil && isString(nv) {
			label = "module call " + quote(nv.Value)
		}
		prefix := label + ": "
		hasName, hasSource := false, false
		p.fields(item, "in "+label, callFields, func(key string, k, v *yaml.Node) {
			c.FieldPos[key] = posOf(v)
			switch key {
			case "name":
				hasName = true
				if name, ok := p.str(v, prefix, "name"); ok {
					c.Name = name
					if !nameRE.MatchString(name) {
						p.addf(v, "invalid module call name %s: must match %s", quote(name), namePattern)
					} else if knownRoot(name) {
						// data.x would read as a data entry's address, var.x as a variable.
						p.addf(v, "invalid module call name %s: it is reserved (data, var, local, each, count, module, path, self and terraform start other references)", quote(name))
					} else if f, dup := seen[name]; dup {
						p.addf(v, "duplicate module call name %s (first at line %d)", quote(name), f.FieldPos["name"].Line)
					} else {
						seen[name] = c
					}
				}
			case "source":
				hasSource = true
				if src, ok := p.str(v, prefix, "source"); ok {
					c.Source = src
					if msg := checkSource(src); msg != "" {
						p.addf(v, "%sinvalid source %s: %s", prefix, quote(src), msg)
					} else {
						c.Dir = filepath.Join(filepath.Dir(p.file), filepath.FromSlash(src))
					}
				}
			case "inputs":
				if isNull(v) {
					return
				}
				if v.Kind != yaml.MappingNode {
					p.addf(v, "%sinputs must be a mapping of the module's variable names to values, not %s", prefix, describe(v))
					return
				}
				fp := map[string]Pos{}
				p.tc = cn.refs
				c.Inputs, _ = p.mapping(v, fp)
				p.tc = nil
				for k, pos := range fp {
					c.FieldPos["inputs."+strings.TrimPrefix(k, "config.")] = pos
				}
			case "for_each", "count":
				p.callForEach(cn, prefix, key, v)
			case "protection":
				if isNull(v) {
					return
				}
				if str, ok := p.str(v, prefix, "protection"); ok {
					if lv, ok := protection.Parse(str); ok {
						c.Protection = lv
					} else {
						p.addf(v, "%sunknown protection level %s (want ephemeral, durable or protected)", prefix, quote(str))
					}
				}
			}
		})
		if !hasName {
			p.addf(item, "%s is missing required field \"name\"", label)
		}
		if !hasSource {
			p.addf(item, "%s is missing required field \"source\"", label)
		}
		p.bindCallKeys(c)
		_, isCount := c.FieldPos["count"]
		_, isEach := c.FieldPos["for_each"]
		for _, ref := range cn.refs.refs {
			switch ref.Kind {
			case RefVar, RefLocal:
			case RefEachKey, RefEachValue:
				if !isEach {
					p.add(ref.Pos, "%s%s is only allowed in the inputs of a module call with for_each", prefix, ref)
				}
			case RefCountIndex:
				if !isCount {
					p.add(ref.Pos, "%s%s is only allowed in the inputs of a module call with count", prefix, ref)
				}
			case RefResource, RefData, RefModule, RefStack:
				// Checked once the file's resources, data entries and
				// calls are all known (checkCallRefs); inlined into the
				// module's resources that use the input (inlineInputs).
			}
		}
		s.Modules = append(s.Modules, c)
		p.calls = append(p.calls, cn)
	}
}

// callForEach reads a call's for_each (a literal mapping or list) or
// count (a literal whole number), whose instances are made when the spec
// is read; a ${...} over variables and locals is callRepeatExpr's.
func (p *parser) callForEach(cn *callNodes, prefix, field string, v *yaml.Node) {
	c := cn.c
	if isNull(v) {
		delete(c.FieldPos, field)
		return
	}
	if c.Repeated {
		delete(c.FieldPos, field)
		p.addf(v, "%scount and for_each cannot both be set: count makes CALL[0], CALL[1], ...; for_each one instance per key", prefix)
		return
	}
	if v.Kind == yaml.ScalarNode && strings.Contains(v.Value, "${") {
		p.callRepeatExpr(cn, prefix, field, v)
		return
	}
	p.tc = &tmplCtx{where: "a module call's " + field, noRefs: true}
	val, ok := p.value(v)
	p.tc = nil
	if !ok {
		return
	}
	c.Repeated = true
	if field == "count" {
		n, isNum := val.(float64)
		switch {
		case isNum && n < 0:
			p.addf(v, "%scount %v is negative: write the number of instances (count: 0 makes none)", prefix, n)
		case !isNum || n != float64(int(n)):
			p.addf(v, "%scount must be a whole number (count: 2, or an expression of variables and locals: count: ${var.copies}), not %s", prefix, describe(v))
		case n > maxCallInstances:
			p.addf(v, "%scount %d is more than the %d instances a call may have", prefix, int(n), maxCallInstances)
		default:
			for i := range int(n) {
				c.Instances = append(c.Instances, CallInstance{Key: strconv.Itoa(i), Count: true, Index: i})
			}
		}
		return
	}
	add := func(n *yaml.Node, key string, val any) {
		if !ValidKey(key) {
			p.addf(n, "%sinvalid for_each key %s: a key must match %s", prefix, quote(key), KeyPattern)
			return
		}
		for _, in := range c.Instances {
			if in.Key == key {
				p.addf(n, "%sduplicate for_each key %s", prefix, quote(key))
				return
			}
		}
		c.Instances = append(c.Instances, CallInstance{Key: key, Value: val})
	}
	switch val := val.(type) {
	case map[string]any:
		for i := 0; i+1 < len(v.Content); i += 2 {
			k := v.Content[i]
			add(k, k.Value, val[k.Value])
		}
	case []any:
		for i, e := range val {
			str, isStr := e.(string)
			if !isStr {
				p.addf(v.Content[i], "%sa for_each list holds strings (its keys), not %s", prefix, describe(v.Content[i]))
				continue
			}
			add(v.Content[i], str, str)
		}
	default:
		p.addf(v, "%sfor_each must be a mapping or a list written in the spec, not %s (a call's instances are known when the spec is read: ${...} cannot set them yet)", prefix, describe(v))
	}
	if len(c.Instances) > maxCallInstances {
		p.addf(v, "%sfor_each has %d keys, more than the %d instances a call may have", prefix, len(c.Instances), maxCallInstances)
		c.Instances = nil
	}
}

// checkSource says why src is not a module source, or "". A source is a
// local folder relative to the calling file, written ./DIR or ../DIR with
// forward slashes; ".." may leave the calling file's folder (a shared
// modules folder beside the stacks' is the common layout), since the
// module is read only, never written.
func checkSource(src string) string {
	switch {
	case filepath.IsAbs(src) || strings.HasPrefix(src, "/") || filepath.VolumeName(src) != "":
		return "an absolute path is not a module source: write a path relative to the calling file (./modules/NAME)"
	case !strings.HasPrefix(src, "./") && !strings.HasPrefix(src, "../"):
		return "a module source is a local folder starting with ./ or ../ (only local modules are supported)"
	case strings.Contains(src, `\`):
		return "write the path with forward slashes"
	}
	return ""
}

// callProblem is the suffix that names the call that led to a problem in a
// module file.
func callProblem(file string, c *ModuleCall) string {
	return fmt.Sprintf(" (in module call %s at %s)", c.Name, Problem{File: file, Pos: c.FieldPos["name"]}.where())
}

// loader reads the module files of one spec: from disk, or from the texts
// recorded with it (a revision's, a saved plan's), and keeps what it read.
type loader struct {
	root string // the spec's folder: module files are named relative to it
	// recorded are the module files recorded with the spec's text, by
	// name; nil reads them from disk.
	recorded map[string]string
	read     map[string]string // the module files read, by name
	// callKeys are the instances decided for the calls whose for_each or
	// count is an expression, by their name in the stack (CALL,
	// CALL["KEY"].INNER, ...): WithCallInstances.
	callKeys map[string][]CallInstance
	// cache holds the modules read without problems, by depth and folder
	// (loadModule); instantiating one never changes it.
	cache map[string]*Spec
}

func newLoader(file string, recorded map[string]string) *loader {
	return &loader{root: filepath.Dir(file), recorded: recorded, read: map[string]string{}, cache: map[string]*Spec{}}
}

// rel names path relative to the spec's folder, with forward slashes.
func (ld *loader) rel(path string) string {
	if r, err := filepath.Rel(ld.root, path); err == nil {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(path)
}

// recordMark separates a spec's text from the module files recorded with
// it (Recorded). A NUL is never in a spec (YAML refuses it), so no text a
// user writes can hold it.
const recordMark = "\x00bulwark: module files\x00\n"

// Recorded returns what a revision and a saved plan record of the spec:
// its text, followed, when it calls modules, by every module file it read
// (names relative to the spec's folder, and texts), so that a rollback and
// `apply PLAN` read the modules as they were rather than as they are on
// disk. Parse reads it back. Without modules it is the text alone, as
// recorded before modules were.
func (s *Spec) Recorded() []byte {
	if len(s.ModuleFiles) == 0 {
		return s.Text
	}
	b, err := json.Marshal(s.ModuleFiles) // sorted keys: the same files give the same bytes
	if err != nil {
		panic(fmt.Sprintf("spec: module files: %v", err)) // a map of strings always encodes
	}
	out := make([]byte, 0, len(s.Text)+len(recordMark)+len(b))
	out = append(append(append(out, s.Text...), recordMark...), b...)
	return out
}

// SplitRecorded splits what Recorded returned into the spec's text and its
// module files (nil when none were recorded).
func SplitRecorded(data []byte) ([]byte, map[string]string, error) {
	text, rest, ok := bytes.Cut(data, []byte(recordMark))
	if !ok {
		return data, nil, nil
	}
	files := map[string]string{}
	if err := json.Unmarshal(rest, &files); err != nil {
		return nil, nil, fmt.Errorf("the module files recorded with the spec: %w", err)
	}
	return text, files, nil
}

// maxModuleDepth is how deep module calls may nest: a stack calling a
// module calling a module ... Terraform has no limit but its cycle check;
// a limit turns a runaway chain (a generated tree of modules) into a clear
// problem rather than a slow read.
const maxModuleDepth = 16

// loadModule reads and parses the module c calls, for the caller s, and
// instantiates the modules it calls in turn. chain holds the folders of
// the modules that led to s (none for a stack), outermost first, so that a
// cycle of sources and a chain too deep are refused.
func loadModule(ld *loader, s *Spec, c *ModuleCall, chain []string, prefix string) (*Spec, Problems) {
	path := filepath.Join(c.Dir, ModuleFile)
	at := callProblem(s.File, c)
	fail := func(msg string) (*Spec, Problems) {
		return nil, Problems{{File: s.File, Pos: c.FieldPos["source"], Msg: fmt.Sprintf("module call %s: %s", quote(c.Name), msg)}}
	}
	dir := filepath.Clean(c.Dir)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if i := slices.Index(chain, dir); i >= 0 {
		steps := make([]string, 0, len(chain)-i+1)
		for _, d := range chain[i:] {
			steps = append(steps, relTo(d))
		}
		steps = append(steps, relTo(dir))
		return fail(fmt.Sprintf("source %s makes a cycle of modules: %s (a module cannot call itself, directly or through others)", quote(c.Source), strings.Join(steps, " -> ")))
	}
	if len(chain) >= maxModuleDepth {
		return fail(fmt.Sprintf("modules nest more than %d deep (a module calling a module ...); flatten the chain", maxModuleDepth))
	}
	// A module read once is read again for another call at the same
	// depth from what the first read made: a module called from many
	// places (or a chain of modules each calling the next many times) is
	// parsed once per depth, not once per path to it.
	// A module whose calls take their instances from its variables
	// (late) is read again for each instance, path naming it: its calls'
	// decided instances differ from one to the next.
	key := strconv.Itoa(len(chain)) + ":" + dir
	if m, ok := ld.cache[key]; ok {
		return m, nil
	}
	if m, ok := ld.cache[key+":"+prefix]; ok {
		return m, nil
	}
	rel := ld.rel(path)
	var data []byte
	if ld.recorded != nil {
		text, ok := ld.recorded[rel]
		if !ok {
			return fail(fmt.Sprintf("source %s: the recorded spec holds no %s (it was recorded without it)", quote(c.Source), rel))
		}
		data = []byte(text)
	} else {
		fi, err := os.Stat(c.Dir)
		switch {
		case err != nil:
			return fail(fmt.Sprintf("source %s: no such folder (%s)", quote(c.Source), c.Dir))
		case !fi.IsDir():
			return fail(fmt.Sprintf("source %s is not a folder", quote(c.Source)))
		}
		f, err := os.Open(path)
		if err != nil {
			return fail(fmt.Sprintf("source %s holds no %s", quote(c.Source), ModuleFile))
		}
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, maxSize+1))
		if err != nil {
			return fail(fmt.Sprintf("read %s: %v", path, err))
		}
		if len(data) > maxSize {
			return nil, Problems{{File: path, Msg: fmt.Sprintf("module is larger than %d bytes (1 MiB); refusing to read it%s", maxSize, at)}}
		}
	}
	ld.read[rel] = string(data)
	p := &parser{file: path, src: data, skip: map[*yaml.Node]bool{}, frag: s, ld: ld, path: prefix}
	var m *Spec
	if top := p.decode(data); top != nil {
		m = p.spec(top)
	}
	if len(p.probs) == 0 && len(m.Modules) > 0 {
		p.probs = instantiateAt(ld, m, p.calls, append(slices.Clone(chain), dir), prefix)
	}
	if m != nil {
		for _, mc := range m.Modules {
			m.PerInstance = m.PerInstance || mc.RepeatExpr != nil
		}
	}
	if len(p.probs) > 0 {
		p.probs.sort()
		for i := range p.probs {
			p.probs[i].Msg += at
		}
		return nil, p.probs
	}
	if m.PerInstance {
		key += ":" + prefix
	}
	ld.cache[key] = m
	return m, nil
}

// relTo returns dir relative to the working folder when it is below it,
// for messages; else dir.
func relTo(dir string) string {
	wd, err := os.Getwd()
	if err != nil {
		return dir
	}
	if rel, err := filepath.Rel(wd, dir); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return dir
}

// instantiate reads every module s calls and adds its entries to s under
// the call's name (each instance's name, CALL["KEY"] or CALL[N], for a
// call with for_each or count); then it replaces every
// ${module.CALL.OUTPUT}. It returns the problems found, those of the
// caller's file first.
func instantiate(ld *loader, s *Spec, calls []*callNodes, chain []string) Problems {
	return instantiateAt(ld, s, calls, chain, "")
}

// instantiateAt is instantiate for the instance of a module named prefix
// in the stack (w["eu"]. for a module called by w with for_each; "" for
// the stack itself): its calls' instances decided from its variables are
// found under prefix+CALL.
func instantiateAt(ld *loader, s *Spec, calls []*callNodes, chain []string, prefix string) Problems {
	var probs, own Problems
	mr := moduleRefs{file: s.File, outputs: map[string]map[string]any{}, calls: map[string]*ModuleCall{}, loaded: map[string]bool{}}
	for _, cn := range calls {
		c := cn.c
		mr.calls[c.Name] = c
		m, ps := loadModule(ld, s, c, chain, prefix+c.Name+".")
		if len(ps) > 0 {
			probs = append(probs, ps...)
			continue
		}
		mr.loaded[c.Name] = true
		s.PerInstance = s.PerInstance || m.PerInstance
		own = append(own, checkInputs(s.File, c, m)...)
		if !c.Repeated || c.Pending {
			if len(s.Resources)+len(s.Data)+len(m.Resources)+len(m.Data) > maxModuleEntries {
				own = append(own, Problem{File: s.File, Pos: c.FieldPos["source"], Msg: fmt.Sprintf("module call %s would make more than %d resources and data entries with the calls before it; split the stack", quote(c.Name), maxModuleEntries)})
				continue
			}
			n := len(s.Locals)
			own = append(own, addInstance(s, c, m, c.Name, c.Inputs, mr.outputs)...)
			markUnbound(c, s.Locals[n:])
			continue
		}
		for _, in := range c.Instances {
			name := c.instanceName(in)
			eb := eachBinder{name: name}
			if in.Count {
				s.Locals = append(s.Locals, &Local{Name: eb.local("count", "index"), Value: float64(in.Index), Pos: c.FieldPos["count"]})
			} else {
				s.Locals = append(s.Locals,
					&Local{Name: eb.local("each", "key"), Value: in.Key, Pos: c.FieldPos["for_each"]},
					&Local{Name: eb.local("each", "value"), Value: value.Clone(in.Value), Pos: c.FieldPos["for_each"]})
			}
			inputs := mapTemplates(c.Inputs, eb.template).(map[string]any)
			m := m
			if m.PerInstance {
				mi, ps := loadModule(ld, s, c, chain, prefix+name+".")
				if len(ps) > 0 {
					probs = append(probs, ps...)
					break
				}
				m = mi
			}
			if len(s.Resources)+len(s.Data)+len(m.Resources)+len(m.Data) > maxModuleEntries {
				own = append(own, Problem{File: s.File, Pos: c.FieldPos[repeatField(c)], Msg: fmt.Sprintf("module call %s: its %d instances would make more than %d resources and data entries; split the stack", quote(c.Name), len(c.Instances), maxModuleEntries)})
				break
			}
			ps := addInstance(s, c, m, name, inputs, mr.outputs)
			if len(ps) > 0 {
				own = append(own, ps...)
				break // the same problem in every instance
			}
		}
	}
	for _, res := range s.Resources {
		res.Config = mr.value(res.Config).(map[string]any)
	}
	for _, o := range s.Outputs {
		o.Value = mr.value(o.Value)
	}
	for _, l := range s.Locals {
		l.Value = mr.value(l.Value) // a call's inputs may use another call's outputs
	}
	own = append(own, mr.probs...)
	own = append(own, dependsOnModules(s)...)
	if prefix == "" && len(own) == 0 && len(probs) == 0 {
		// Before the inputs that use resources are inlined: what feeds
		// a nested call's for_each is still in the locals.
		own = append(own, checkNestedRepeat(s)...)
	}
	if len(own) == 0 && len(probs) == 0 {
		own = append(own, inlineInputs(s, calls)...)
	}
	if len(probs) == 0 {
		own = append(own, checkMovedIntoModules(s)...)
	}
	own.sort()
	return append(own, probs...)
}

// addInstance adds the module m, called by c, to s under name with the
// given inputs, and records its outputs under name.
func addInstance(s *Spec, c *ModuleCall, m *Spec, name string, inputs map[string]any, outputs map[string]map[string]any) Problems {
	var own Problems
	r := renamer{call: name}
	via := callProblem(s.File, c)
	for _, v := range m.Variables {
		val, ok := inputs[v.Name]
		if !ok {
			val = value.Clone(v.Default)
		}
		s.Locals = append(s.Locals, &Local{Name: r.varName(v.Name), Value: val, Pos: v.Pos})
	}
	for _, l := range m.Locals {
		s.Locals = append(s.Locals, &Local{Name: r.localName(l.Name), Value: r.value(l.Value), Pos: l.Pos, Unbound: l.Unbound})
	}
	for _, d := range m.Data {
		cd := *d
		cd.Name = r.name(d.Name)
		cd.File, cd.Via = m.File, via
		if d.File != "" { // a nested call's: keep its file, add this call
			cd.File, cd.Via = d.File, d.Via+via
		}
		cd.Config = r.value(d.Config).(map[string]any)
		cd.DependsOn = r.names(d.DependsOn)
		cd.FieldPos = maps.Clone(d.FieldPos)
		s.Data = append(s.Data, &cd)
	}
	for _, res := range m.Resources {
		cr := *res
		cr.Name = r.name(res.Name)
		cr.File, cr.Via = m.File, via
		if res.File != "" {
			cr.File, cr.Via = res.File, res.Via+via
		}
		cr.Config = r.value(res.Config).(map[string]any)
		cr.DependsOn = r.names(res.DependsOn)
		cr.FieldPos = maps.Clone(res.FieldPos)
		if res.ForEach != nil {
			fe := *res.ForEach
			if fe.Ref != nil {
				fe.Ref = r.ref(fe.Ref)
			}
			fe.Value = r.value(fe.Value)
			cr.ForEach = &fe
		}
		if c.Protection != protection.Unspecified {
			if c.Protection < res.Protection {
				own = append(own, Problem{File: s.File, Pos: c.FieldPos["protection"], Msg: fmt.Sprintf(
					"module call %s: protection %s would lower resource %s (%s at %s); a call may raise its resources' protection, never lower it",
					quote(c.Name), c.Protection, quote(cr.Name), res.Protection, Problem{File: cr.File, Pos: res.FieldPos["protection"]}.where())})
			} else {
				cr.Protection = c.Protection
			}
		}
		s.Resources = append(s.Resources, &cr)
	}
	for _, mc := range m.PendingCalls() {
		nc := *mc
		nc.Name = name + "." + mc.Name
		nc.RepeatExpr = rewriteTemplate(mc.RepeatExpr, r.ref, r.traversal)
		nc.File, nc.Via = m.File, via
		if mc.File != "" {
			nc.File, nc.Via = mc.File, mc.Via+via
		}
		s.NestedCalls = append(s.NestedCalls, &nc)
	}
	outs := map[string]any{}
	for _, o := range m.Outputs {
		outs[o.Name] = r.value(o.Value)
	}
	outputs[name] = outs
	return own
}

// eachBinder makes ${each.key}, ${each.value} and ${count.index} in the
// inputs of one instance of a call locals of the caller, named after the
// instance (CALL["KEY"].each.key), whose values instantiate sets.
type eachBinder struct{ name string }

func (eb eachBinder) local(root, attr string) string { return eb.name + "." + root + "." + attr }

func (eb eachBinder) ref(ref *Ref) *Ref {
	c := *ref
	switch ref.Kind {
	case RefEachKey:
		c.Kind, c.Name = RefLocal, eb.local("each", "key")
	case RefEachValue:
		c.Kind, c.Name = RefLocal, eb.local("each", "value")
	case RefCountIndex:
		c.Kind, c.Name = RefLocal, eb.local("count", "index")
	}
	return &c
}

func (eb eachBinder) traversal(tr hcl.Traversal) hcl.Traversal {
	root, ok := tr[0].(hcl.TraverseRoot)
	if !ok || len(tr) < 2 || root.Name != "each" && root.Name != "count" {
		return tr
	}
	a, ok := tr[1].(hcl.TraverseAttr)
	if !ok {
		return tr
	}
	out := slices.Clone(tr)
	out[0] = hcl.TraverseRoot{Name: "local", SrcRange: root.SrcRange}
	out[1] = hcl.TraverseAttr{Name: eb.local(root.Name, a.Name), SrcRange: a.SrcRange}
	return out
}

func (eb eachBinder) template(t *Template) any {
	return rewriteTemplate(t, eb.ref, eb.traversal)
}

// rewriteTemplate returns a copy of t with every plain reference passed
// through ref and every expression's traversals through traversal (the
// expression parsed again from its source, its references renamed too).
func rewriteTemplate(t *Template, ref func(*Ref) *Ref, traversal func(hcl.Traversal) hcl.Traversal) *Template {
	parts := make([]Part, len(t.Parts))
	for i, p := range t.Parts {
		switch {
		case p.Ref != nil:
			parts[i] = Part{Ref: ref(p.Ref)}
		case p.Expr != nil:
			x := reparse(p.Expr, traversal)
			for j, r := range x.Refs {
				x.Refs[j] = ref(r)
			}
			parts[i] = Part{Expr: x}
		default:
			parts[i] = p
		}
	}
	return &Template{Parts: parts, File: t.File, Pos: t.Pos}
}

// checkInputs checks the call's inputs against the module's variables.
func checkInputs(file string, c *ModuleCall, m *Spec) Problems {
	var probs Problems
	names := make([]string, 0, len(m.Variables))
	for _, v := range m.Variables {
		names = append(names, v.Name)
		in, given := c.Inputs[v.Name]
		switch {
		case !given && !v.HasDefault:
			probs = append(probs, Problem{File: file, Pos: c.Pos, Msg: fmt.Sprintf("module call %s: missing input %s (the module's variable at %s has no default)", quote(c.Name), quote(v.Name), Problem{File: m.File, Pos: v.Pos}.where())})
		case given:
			if _, tmpl := in.(*Template); !tmpl {
				if why := TypeMismatch(v.Type, in); why != "" {
					probs = append(probs, Problem{File: file, Pos: c.FieldPos["inputs."+v.Name], Msg: fmt.Sprintf("module call %s: input %s %s", quote(c.Name), quote(v.Name), why)})
				}
			}
		}
	}
	slices.Sort(names)
	for _, k := range slices.Sorted(maps.Keys(c.Inputs)) {
		if _, ok := m.Variable(k); !ok {
			probs = append(probs, Problem{File: file, Pos: c.FieldPos["inputs."+k], Msg: fmt.Sprintf("module call %s: unknown input %s (the module's variables: %s)", quote(c.Name), quote(k), nameList(names))})
		}
	}
	return probs
}

// renamer moves a module's references under its call.
type renamer struct{ call string }

func (r renamer) name(n string) string      { return r.call + "." + n }
func (r renamer) varName(n string) string   { return r.call + ".var." + n }
func (r renamer) localName(n string) string { return r.call + ".local." + n }

func (r renamer) names(ns []string) []string {
	if ns == nil {
		return nil
	}
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = r.name(n)
	}
	return out
}

// ref returns a copy of ref named as the caller sees it.
func (r renamer) ref(ref *Ref) *Ref {
	c := *ref
	switch ref.Kind {
	case RefVar:
		c.Kind, c.Name = RefLocal, r.varName(ref.Name)
	case RefLocal:
		c.Name = r.localName(ref.Name)
	case RefResource, RefData:
		c.Name = r.name(ref.Name)
	}
	return &c
}

// traversal rewrites one free traversal of a module's expression.
func (r renamer) traversal(tr hcl.Traversal) hcl.Traversal {
	root, ok := tr[0].(hcl.TraverseRoot)
	if !ok {
		return tr
	}
	out := slices.Clone(tr)
	switch root.Name {
	case "var", "local":
		if len(tr) < 2 {
			return tr
		}
		a, ok := tr[1].(hcl.TraverseAttr)
		if !ok {
			return tr
		}
		name := r.localName(a.Name)
		if root.Name == "var" {
			name = r.varName(a.Name)
		}
		out[0] = hcl.TraverseRoot{Name: "local", SrcRange: root.SrcRange}
		out[1] = hcl.TraverseAttr{Name: name, SrcRange: a.SrcRange}
	case "data":
		if len(tr) < 2 {
			return tr
		}
		if a, ok := tr[1].(hcl.TraverseAttr); ok {
			out[1] = hcl.TraverseAttr{Name: r.name(a.Name), SrcRange: a.SrcRange}
		}
	case "each", "count", "module", "path", "self", "terraform":
	default:
		out[0] = hcl.TraverseRoot{Name: r.name(root.Name), SrcRange: root.SrcRange}
	}
	return out
}

// value returns a copy of v with every reference renamed.
func (r renamer) value(v any) any {
	return mapTemplates(v, func(t *Template) any { return rewriteTemplate(t, r.ref, r.traversal) })
}

// mapTemplates returns a copy of v with fn applied to each template.
func mapTemplates(v any, fn func(*Template) any) any {
	switch v := v.(type) {
	case *Template:
		return fn(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = mapTemplates(e, fn)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = mapTemplates(e, fn)
		}
		return out
	}
	return value.Clone(v)
}

// reparse returns a fresh copy of x (its own syntax tree, so that it can be
// changed) with every free traversal passed through fn, after the
// rewrites x has had already (a module's expression is renamed once per
// call it is nested in). Its references are copies of x's, which the
// caller renames as fn does.
func reparse(x *Expr, fn func(hcl.Traversal) hcl.Traversal) *Expr {
	return reparseWith(x, &exprRewrite{traversal: fn})
}

// reparseWith is reparse with any rewrite; nil makes a fresh copy only.
func reparseWith(x *Expr, rw *exprRewrite) *Expr {
	nx, prob := parseExpr(x.Src)
	if prob != nil {
		// x parsed once; the same text parses again.
		panic(fmt.Sprintf("spec: expression %s no longer parses: %s", x, prob.msg))
	}
	placeExpr(nx, x.Pos)
	nx.rewrites = slices.Clone(x.rewrites)
	if rw != nil {
		nx.rewrites = append(nx.rewrites, *rw)
	}
	for _, r := range nx.rewrites {
		nx.Syntax = r.apply(nx.Syntax)
	}
	nx.Refs = make([]*Ref, len(x.Refs))
	for i, ref := range x.Refs {
		c := *ref
		nx.Refs[i] = &c
	}
	nx.Keys = slices.Clone(x.Keys)
	return nx
}

// moduleRefs replaces the caller's ${module.CALL.OUTPUT} references.
type moduleRefs struct {
	file string
	// outputs maps a call's instance (CALL, CALL["KEY"], CALL[N]) to its
	// outputs' values, renamed.
	outputs map[string]map[string]any
	calls   map[string]*ModuleCall
	loaded  map[string]bool // the calls whose module could be read
	probs   Problems
}

// output returns the value of the output ref names, or false after
// reporting that there is none.
func (mr *moduleRefs) output(ref *Ref) (any, bool) {
	c := mr.calls[ref.Name]
	if c == nil || !mr.loaded[ref.Name] {
		return nil, false // an unknown call is reported by the parser; an unread module has its own problems
	}
	add := func(format string, args ...any) {
		mr.probs = append(mr.probs, Problem{File: mr.file, Pos: ref.Pos, Msg: fmt.Sprintf(format, args...)})
	}
	if ref.Attr == "" {
		return mr.whole(c, ref)
	}
	inst := c.Name
	switch {
	case c.Repeated && !ref.Keyed:
		add("module call %s has %s: name one instance, ${module.%s[KEY].%s} (${module.%s} alone is every instance's outputs)", quote(c.Name), repeatField(c), c.Name, ref.Attr, c.Name)
		return nil, false
	case !c.Repeated && ref.Keyed:
		add("module call %s has no for_each or count, so it has no instance %s: write ${module.%s.%s}", quote(c.Name), quote(ref.Key), c.Name, ref.Attr)
		return nil, false
	case c.Pending:
		// Its instances are not decided (validate without values): the
		// one instance checked stands for every key.
	case c.Repeated:
		i := slices.IndexFunc(c.Instances, func(in CallInstance) bool { return in.Key == ref.Key })
		if i < 0 {
			keys := make([]string, len(c.Instances))
			for j, in := range c.Instances {
				keys[j] = in.Key
			}
			add("module call %s has no instance %s in %s (its %s: %s)", quote(c.Name), quote(ref.Key), ref, repeatField(c), nameList(keys))
			return nil, false
		}
		inst = c.instanceName(c.Instances[i])
	}
	outs := mr.outputs[inst]
	v, ok := outs[ref.Attr]
	if !ok {
		add("module call %s has no output %s in %s (its outputs: %s)", quote(c.Name), quote(ref.Attr), ref, nameList(slices.Sorted(maps.Keys(outs))))
	}
	return v, ok
}

// whole returns ${module.CALL} (an object of the outputs; for a call with
// for_each a map of the instances' objects by key, with count a list) or
// ${module.CALL["KEY"]} (one instance's object), as Terraform's
// module.CALL is.
func (mr *moduleRefs) whole(c *ModuleCall, ref *Ref) (any, bool) {
	object := func(inst string) map[string]any {
		out := map[string]any{}
		for k, v := range mr.outputs[inst] {
			out[k] = mapTemplates(v, func(t *Template) any { return t })
		}
		return out
	}
	switch {
	case c.Pending:
		return mr.pendingWhole(c, ref, object)
	case !c.Repeated && !ref.Keyed:
		return object(c.Name), true
	case ref.Keyed:
		for _, in := range c.Instances {
			if in.Key == ref.Key {
				return object(c.instanceName(in)), true
			}
		}
		mr.probs = append(mr.probs, Problem{File: mr.file, Pos: ref.Pos, Msg: fmt.Sprintf("module call %s has no instance %s in %s", quote(c.Name), quote(ref.Key), ref)})
		return nil, false
	case repeatField(c) == "count":
		list := make([]any, len(c.Instances))
		for i, in := range c.Instances {
			list[i] = object(c.instanceName(in))
		}
		return list, true
	}
	m := make(map[string]any, len(c.Instances))
	for _, in := range c.Instances {
		m[in.Key] = object(c.instanceName(in))
	}
	return m, true
}

// repeatField names what makes c's instances.
func repeatField(c *ModuleCall) string {
	if _, ok := c.FieldPos["count"]; ok {
		return "count"
	}
	return "for_each"
}

func (mr *moduleRefs) value(v any) any {
	return mapTemplates(v, mr.template)
}

func (mr *moduleRefs) template(t *Template) any {
	has := false
	for _, ref := range t.Refs() {
		has = has || ref.Kind == RefModule
	}
	if !has {
		return t
	}
	if ref := t.Single(); ref != nil {
		v, ok := mr.output(ref)
		if !ok {
			return t
		}
		return mapTemplates(v, func(t *Template) any { return t })
	}
	var parts []Part
	for _, p := range t.Parts {
		switch {
		case p.Ref != nil && p.Ref.Kind == RefModule:
			v, ok := mr.output(p.Ref)
			if !ok {
				continue
			}
			switch v := v.(type) {
			case *Template:
				parts = append(parts, v.Parts...)
			case string:
				parts = append(parts, Part{Lit: v})
			case float64:
				parts = append(parts, Part{Lit: strconv.FormatFloat(v, 'f', -1, 64)})
			case bool:
				parts = append(parts, Part{Lit: strconv.FormatBool(v)})
			default:
				mr.probs = append(mr.probs, Problem{File: mr.file, Pos: p.Ref.Pos, Msg: fmt.Sprintf("%s is not a string and cannot be part of one (use it alone, as the whole value)", p.Ref)})
			}
		case p.Expr != nil:
			parts = append(parts, Part{Expr: mr.expr(p.Expr)})
		default:
			parts = append(parts, p)
		}
	}
	return NewTemplate(t.File, t.Pos, parts)
}

// expr replaces the module outputs an expression uses; each must be one
// reference (a resource's, a data entry's or a local's attribute), which
// takes the output's place in the expression.
func (mr *moduleRefs) expr(x *Expr) *Expr {
	subst := map[string]*Ref{} // "CALL.OUTPUT" -> the output's reference
	whole := map[string]any{}  // "CALL.OUTPUT" or "CALL." -> a value that is more than one reference
	for _, ref := range x.Refs {
		if ref.Kind != RefModule {
			continue
		}
		v, ok := mr.output(ref)
		if !ok {
			continue
		}
		t, _ := v.(*Template)
		if t == nil || t.Single() == nil {
			// Put in as an expression of its own (substModuleValues).
			if _, _, bad := valueLeaves(v); bad != nil {
				mr.probs = append(mr.probs, Problem{File: mr.file, Pos: ref.Pos, Msg: badLeaf(ref, bad)})
				continue
			}
			whole[ref.callInstance()+"."+ref.Attr] = v
			continue
		}
		subst[ref.callInstance()+"."+ref.Attr] = t.Single()
	}
	nx := reparse(x, func(tr hcl.Traversal) hcl.Traversal {
		mref, n, ok := moduleTraversal(tr)
		if !ok {
			return tr
		}
		ref := subst[mref.callInstance()+"."+mref.Attr]
		if ref == nil {
			return tr
		}
		rng := tr[0].SourceRange()
		var head hcl.Traversal
		switch ref.Kind {
		case RefResource:
			head = hcl.Traversal{hcl.TraverseRoot{Name: ref.Name, SrcRange: rng}}
			if ref.Keyed {
				head = append(head, hcl.TraverseIndex{Key: cty.StringVal(ref.Key), SrcRange: rng})
			}
			head = append(head, hcl.TraverseAttr{Name: ref.Attr, SrcRange: rng})
		case RefData:
			head = hcl.Traversal{hcl.TraverseRoot{Name: "data", SrcRange: rng}, hcl.TraverseAttr{Name: ref.Name, SrcRange: rng}, hcl.TraverseAttr{Name: ref.Attr, SrcRange: rng}}
		case RefLocal:
			head = hcl.Traversal{hcl.TraverseRoot{Name: "local", SrcRange: rng}, hcl.TraverseAttr{Name: ref.Name, SrcRange: rng}}
		default:
			return tr
		}
		return append(head, tr[n:]...)
	})
	for i, ref := range nx.Refs {
		if ref.Kind != RefModule {
			continue
		}
		if s := subst[ref.callInstance()+"."+ref.Attr]; s != nil {
			c := *s
			c.Pos = ref.Pos
			nx.Refs[i] = &c
			nx.Keys[i] = c.Key
		}
	}
	if len(whole) > 0 {
		nx = substModuleValues(nx, whole)
	}
	return nx
}

// call returns the module call named name, or nil.
func (s *Spec) call(name string) *ModuleCall {
	for _, c := range s.Modules {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// dependsOnModules resolves the caller's depends_on entries that name a
// module call (every resource of the call) or one of its resources
// (CALL.NAME), and reports those that name nothing.
func dependsOnModules(s *Spec) Problems {
	var ps Problems
	for _, r := range s.Resources {
		if r.File != "" {
			continue // a module's own, renamed already
		}
		var out []string
		changed := false
		for _, d := range r.DependsOn {
			if _, ok := s.Resource(d); ok {
				out = append(out, d)
				continue
			}
			changed = true
			if c := s.call(d); c != nil {
				for _, mr := range s.Resources {
					if (strings.HasPrefix(mr.Name, c.Name+".") || strings.HasPrefix(mr.Name, c.Name+"[")) && !slices.Contains(out, mr.Name) {
						out = append(out, mr.Name)
					}
				}
				continue
			}
			ps = append(ps, Problem{File: s.File, Pos: r.FieldPos["depends_on"], Msg: fmt.Sprintf("resource %s depends on unknown resource %s (no module call declares it)", quote(r.Name), quote(d))})
		}
		if changed {
			r.DependsOn = out
		}
	}
	return ps
}
