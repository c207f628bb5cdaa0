package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bulwark-iac/bulwark/core/protection"
	"gopkg.in/yaml.v3"
)

const (
	// maxSize is the largest spec Load reads.
	maxSize = 1 << 20
	// maxDepth bounds the nesting of YAML nodes, the top-level mapping
	// being at depth 1.
	maxDepth = 64
	// specVersion is the only spec format version this package reads.
	specVersion = 1
)

var (
	stackNameRE = lazy(`^[a-z][a-z0-9-]{0,62}$`)
	nameRE      = lazy(`^[a-z][a-z0-9_-]{0,62}$`)
	// tfSourceRE is a Terraform provider source address:
	// [HOSTNAME/]NAMESPACE/TYPE.
	tfSourceRE = lazy(`^(?i)([a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]+)?/)?[a-z0-9]([a-z0-9-]*[a-z0-9])?/[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	yamlLineRE = lazy(`(?s)^line (\d+): (.*)$`)
)

const (
	stackNamePattern = `[a-z][a-z0-9-]{0,62}`
	namePattern      = `[a-z][a-z0-9_-]{0,62}`
)

var (
	topFields      = []string{"version", "stack", "variables", "locals", "providers", "default_provider", "resources", "data", "outputs", "moved", "removed", "modules"}
	moduleFields   = []string{"variables", "locals", "resources", "data", "outputs", "modules"}
	providerFields = []string{"source", "version", "config"}
	dataFields     = []string{"name", "type", "provider", "config"}
	resourceFields = []string{"name", "type", "provider", "protection", "depends_on", "for_each", "count", "config", "on_failure", "intervention", "import"}
)

// Load reads the spec at path and parses it. A file larger than 1 MiB is
// refused with a Problem; a file that cannot be read returns the read error.
func Load(path string) (*Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	if len(data) > maxSize {
		return nil, Problems{{File: path, Msg: fmt.Sprintf("spec is larger than %d bytes (1 MiB); refusing to read it", maxSize)}}
	}
	return Parse(path, data)
}

// Parse parses and validates the spec in data; file names it in problems.
// It returns either a valid *Spec and a nil error, or a nil *Spec and
// Problems listing every structural problem found, sorted by position.
//
// data may be what Spec.Recorded returned (a revision's or a saved plan's
// text): the modules are then read from the texts recorded with it, never
// from disk.
func Parse(file string, data []byte) (*Spec, error) {
	return parseWith(file, data, nil)
}

// parseWith is Parse with the instances of the calls whose for_each or
// count is an expression decided (WithCallInstances); nil leaves them
// pending.
func parseWith(file string, data []byte, callKeys map[string][]CallInstance) (*Spec, error) {
	data, recorded, err := SplitRecorded(data)
	if err != nil {
		return nil, Problems{{File: file, Msg: err.Error()}}
	}
	ld := newLoader(file, recorded)
	ld.callKeys = callKeys
	p := &parser{file: file, src: data, skip: map[*yaml.Node]bool{}, ld: ld}
	var s *Spec
	if top := p.decode(data); top != nil {
		s = p.spec(top)
	}
	if len(p.probs) > 0 {
		p.probs.sort()
		if s != nil {
			// Every problem at once: the modules' own too.
			for _, c := range s.Modules {
				if c.Dir != "" && c.Name != "" {
					_, ps := loadModule(ld, s, c, nil, c.Name+".")
					p.probs = append(p.probs, ps...)
				}
			}
		}
		return nil, p.probs
	}
	if len(s.Modules) > 0 {
		if probs := instantiate(ld, s, p.calls, nil); len(probs) > 0 {
			return nil, probs
		}
		s.ModuleFiles = ld.read
	} else if probs := checkMovedIntoModules(s); len(probs) > 0 {
		return nil, probs
	}
	s.Text = append([]byte(nil), data...)
	return s, nil
}

// ParseModule parses the module file data (a module.yaml) on its own, as
// no call reads it: a fragment with no version, stack or providers, whose
// resources may name any provider (a caller declares them). The modules
// it calls are read from disk. bulwark fmt checks a module file with it.
func ParseModule(file string, data []byte) (*Spec, error) {
	ld := newLoader(file, nil)
	p := &parser{file: file, src: data, skip: map[*yaml.Node]bool{}, frag: &Spec{File: file}, ld: ld, anyProvider: true}
	var s *Spec
	if top := p.decode(data); top != nil {
		s = p.spec(top)
	}
	if len(p.probs) == 0 && len(s.Modules) > 0 {
		p.probs = instantiate(ld, s, p.calls, nil)
	}
	if len(p.probs) > 0 {
		p.probs.sort()
		return nil, p.probs
	}
	s.Text = append([]byte(nil), data...)
	return s, nil
}

// parser collects the problems of one spec.
type parser struct {
	file  string
	src   []byte
	lines []int // byte offset of each line's start, built when first needed
	cache posCache
	probs Problems
	// tc, when not nil, makes strings with ${ templates and collects their
	// references; nil reads every string as it is.
	tc *tmplCtx
	// skip holds the nodes already reported as aliases or as too deep: the
	// walk neither descends into them nor reports them again.
	skip map[*yaml.Node]bool
	// frag is set when the file is a module's fragment: its caller's
	// providers, no version, stack or providers of its own.
	frag *Spec
	// calls are the modules: calls with the references of their inputs.
	calls []*callNodes
	// ld reads the module files.
	ld *loader
	// anyProvider accepts any provider a resource names: a module file
	// read on its own (ParseModule) has no caller to declare them.
	anyProvider bool
	// path names the module instance a module file is read for, in the
	// stack (w["eu"].), so that its calls' decided instances are found
	// in the loader's (callKeys under path+CALL); "" for the stack.
	path string
}

func (p *parser) add(pos Pos, format string, args ...any) {
	p.probs = append(p.probs, Problem{File: p.file, Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) addf(n *yaml.Node, format string, args ...any) {
	p.add(posOf(n), format, args...)
}

func posOf(n *yaml.Node) Pos { return Pos{Line: n.Line, Col: n.Column} }

// decode parses data as one YAML document and returns its top node, or nil
// after reporting why there is none.
func (p *parser) decode(data []byte) (top *yaml.Node) {
	defer func() {
		if r := recover(); r != nil {
			p.add(Pos{}, "invalid YAML: the YAML parser failed: %v", r)
			top = nil
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.add(Pos{}, "spec is empty")
		} else {
			p.yamlError(err)
		}
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		p.add(Pos{Line: next.Line, Col: next.Column}, "spec has more than one YAML document (only one is allowed)")
	case !errors.Is(err, io.EOF):
		p.yamlError(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.add(Pos{}, "spec is empty")
		return nil
	}
	top = doc.Content[0]
	if top.Kind == yaml.ScalarNode && top.ShortTag() == "!!null" && top.Anchor == "" {
		p.add(Pos{}, "spec is empty")
		return nil
	}
	p.scan(top, 1)
	if p.skip[top] {
		return nil
	}
	if top.Kind != yaml.MappingNode {
		p.addf(top, "spec must be a mapping with fields %s, not %s", strings.Join(topFields, ", "), describe(top))
		return nil
	}
	return top
}

// yamlParserErrors are the messages of yaml.v3's parser (as opposed to
// scanner) errors. yaml.v3 prints a parser error's line 0-based and leaves
// it out when it is 0; a scanner error's line is 1-based.
var yamlParserErrors = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"found undefined tag handle",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
}

// yamlError reports a YAML syntax error, at its line when it is known.
func (p *parser) yamlError(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			line, msg = n, m[2]
		}
	}
	if slices.Contains(yamlParserErrors, msg) {
		line++
	}
	if strings.HasPrefix(msg, "did not find expected ',' or") && p.lineHas(line, "${") {
		// A plain ${...} ends at the first } inside {...} or [...].
		msg += ` (inside {...} or [...], quote a reference: "${var.NAME}")`
	}
	p.add(Pos{Line: line}, "invalid YAML: %s", msg)
}

// scan reports, in the whole tree under n (at depth depth), YAML anchors
// and aliases (not allowed, so that no alias expansion can blow up) and
// nodes nested deeper than maxDepth, once per node whose contents are too
// deep. It records aliases and too-deep nodes in p.skip and does not descend
// into them, so its recursion is bounded by maxDepth.
func (p *parser) scan(n *yaml.Node, depth int) {
	if n.Anchor != "" {
		p.addf(n, "YAML anchors are not allowed in a spec (&%s)", clip(n.Anchor))
	}
	if n.Kind == yaml.AliasNode {
		p.addf(n, "YAML aliases are not allowed in a spec (*%s)", clip(n.Value))
		p.skip[n] = true
		return
	}
	if len(n.Content) > 0 && depth >= maxDepth {
		p.addf(n.Content[0], "value is nested more than %d levels deep", maxDepth)
		for _, c := range n.Content {
			p.skip[c] = true
		}
		return
	}
	for _, c := range n.Content {
		p.scan(c, depth+1)
	}
}

// describe names a node's kind for messages: "a string", "a list"...
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	case yaml.ScalarNode:
		switch tag := n.ShortTag(); tag {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a bool"
		case "!!null":
			return "null"
		case "!!timestamp":
			return "a timestamp"
		case "!!binary":
			return "binary data"
		case "!!merge":
			return "a merge key"
		default:
			return fmt.Sprintf("a value tagged %s", clip(tag))
		}
	}
	return "an unknown YAML node"
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func isString(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str"
}

// fields walks the key/value pairs of the mapping m, reporting keys that are
// not scalars, repeated or not in allowed, and calls fn for the others whose
// value is not an already reported node. where says where m is, for
// messages ("at top level", "in resource \"web\"").
func (p *parser) fields(m *yaml.Node, where string, allowed []string, fn func(key string, k, v *yaml.Node)) {
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if p.skip[k] {
			continue
		}
		switch {
		case k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge":
			p.addf(k, "YAML merge keys (<<) are not allowed in a spec")
			continue
		case k.Kind != yaml.ScalarNode:
			p.addf(k, "field names must be strings, not %s (%s)", describe(k), where)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			p.addf(k, "duplicate field %s %s (first at line %d)", quote(k.Value), where, first.Line)
			continue
		}
		seen[k.Value] = k
		if !slices.Contains(allowed, k.Value) {
			p.addf(k, "unknown field %s %s (allowed: %s)", quote(k.Value), where, strings.Join(allowed, ", "))
			continue
		}
		if p.skip[v] {
			continue
		}
		fn(k.Value, k, v)
	}
}

// str returns the string value of n, or reports that what must be a string.
// prefix starts the message ("", "resource \"web\": ").
func (p *parser) str(n *yaml.Node, prefix, what string) (string, bool) {
	if !isString(n) {
		p.addf(n, "%s%s must be a string, not %s", prefix, what, describe(n))
		return "", false
	}
	return n.Value, true
}

// spec walks the top-level mapping.
func (p *parser) spec(top *yaml.Node) *Spec {
	s := &Spec{File: p.file, Providers: map[string]*Provider{}}
	var (
		hasVersion, hasStack, hasResources bool
		providersOK                        = true
		providersNode, defaultNode         *yaml.Node
		resources                          []*resourceNodes
		data                               []*dataNodes
		outputs                            []*tmplCtx
		locals                             []*tmplCtx
		providerRefs, stackRefs            *tmplCtx
	)
	allowed := topFields
	if p.frag != nil {
		allowed = moduleFields
		s.Providers, s.DefaultProvider = p.frag.Providers, p.frag.DefaultProvider
		hasVersion, hasStack = true, true
	}
	p.fields(top, "at top level", allowed, func(key string, k, v *yaml.Node) {
		switch key {
		case "modules":
			p.modules(s, v)
		case "version":
			hasVersion = true
			p.version(s, v)
		case "stack":
			hasStack = true
			stackRefs = p.stack(s, v)
		case "providers":
			providersNode = v
			switch {
			case isNull(v):
			case v.Kind == yaml.MappingNode:
				providerRefs = p.providers(s, v)
			default:
				providersOK = false
				p.addf(v, "providers must be a mapping of local names to providers, not %s", describe(v))
			}
		case "default_provider":
			if isNull(v) {
				return
			}
			if name, ok := p.str(v, "", "default_provider"); ok {
				s.DefaultProvider = name
				defaultNode = v
			}
		case "variables":
			p.variables(s, v)
		case "locals":
			locals = p.locals(s, v)
		case "outputs":
			outputs = p.outputs(s, v)
		case "moved":
			p.movedEntries(s, v)
		case "removed":
			p.removedEntries(s, v)
		case "data":
			p.list(v, "data", "{name, type, provider, config}", func(m *yaml.Node, index int) {
				data = append(data, p.dataEntry(m, index))
			})
		case "resources":
			hasResources = true
			switch {
			case isNull(v):
			case v.Kind == yaml.SequenceNode:
				for i, item := range v.Content {
					if p.skip[item] {
						continue
					}
					if item.Kind != yaml.MappingNode {
						p.addf(item, "resource #%d must be a mapping, not %s", i+1, describe(item))
						continue
					}
					resources = append(resources, p.resource(item, i+1))
				}
			default:
				p.addf(v, "resources must be a list, not %s", describe(v))
			}
		}
	})
	if !hasVersion {
		p.addf(top, "missing required field \"version\" (this bulwark reads version %d)", specVersion)
	}
	if !hasStack {
		p.addf(top, "missing required field \"stack\"")
	}
	if !hasResources {
		p.addf(top, "missing required field \"resources\"")
	}

	// Providers.
	declared := slices.Sorted(maps.Keys(s.Providers))
	declaredList := nameList(declared)
	if len(declared) == 0 && p.frag == nil {
		if providersOK {
			if providersNode != nil {
				p.addf(providersNode, "no providers declared")
			} else {
				p.addf(top, "no providers declared (add a providers: mapping)")
			}
		}
	}
	switch {
	case p.frag != nil:
	case defaultNode != nil:
		if _, ok := s.Providers[s.DefaultProvider]; !ok {
			p.addf(defaultNode, "default_provider %s is not a declared provider (declared: %s)", quote(s.DefaultProvider), declaredList)
		}
	case len(declared) == 1:
		s.DefaultProvider = declared[0]
	}
	for _, rn := range resources {
		r := rn.r
		if r.ExplicitProvider {
			if _, ok := s.Providers[r.Provider]; !ok && !p.anyProvider {
				p.add(r.FieldPos["provider"], "%sprovider %s is not declared (declared: %s)", rn.prefix, quote(r.Provider), declaredList)
			}
			continue
		}
		switch {
		case s.DefaultProvider != "":
			r.Provider = s.DefaultProvider
		case len(declared) > 1:
			p.add(r.Pos, "%s names no provider, and there is no default_provider to choose among the declared ones (%s)", rn.label, declaredList)
		}
	}

	for _, dn := range data {
		d := dn.d
		if d.ExplicitProvider {
			if _, ok := s.Providers[d.Provider]; !ok && !p.anyProvider {
				p.add(d.FieldPos["provider"], "%sprovider %s is not declared (declared: %s)", dn.prefix, quote(d.Provider), declaredList)
			}
			continue
		}
		switch {
		case s.DefaultProvider != "":
			d.Provider = s.DefaultProvider
		case len(declared) > 1:
			p.add(d.Pos, "%s names no provider, and there is no default_provider to choose among the declared ones (%s)", dn.label, declaredList)
		}
	}
	firstData := map[string]*Data{}
	for _, dn := range data {
		d := dn.d
		if !dn.named {
			continue
		}
		if f, dup := firstData[d.Name]; dup {
			p.add(d.FieldPos["name"], "duplicate data name %s (first at line %d)", quote(d.Name), f.FieldPos["name"].Line)
			continue
		}
		firstData[d.Name] = d
	}

	// Names and dependencies.
	first := map[string]*Resource{}
	for _, rn := range resources {
		r := rn.r
		if !rn.named {
			continue
		}
		if f, dup := first[r.Name]; dup {
			p.add(r.FieldPos["name"], "duplicate resource name %s (first at line %d)", quote(r.Name), f.FieldPos["name"].Line)
			continue
		}
		first[r.Name] = r
	}
	var nodes []string
	deps := map[string][]string{}
	for _, rn := range resources {
		r := rn.r
		isFirst := rn.named && first[r.Name] == r
		if isFirst {
			nodes = append(nodes, r.Name)
		}
		for i, d := range r.DependsOn {
			switch {
			case rn.named && d == r.Name:
				p.add(rn.depPos[i], "%s depends on itself", rn.label)
			case first[d] == nil && (strings.Contains(d, ".") || s.call(d) != nil):
				// A module call, or one of its resources: checked once
				// the modules are instantiated.
			case first[d] == nil:
				p.add(rn.depPos[i], "%s depends on unknown resource %s", rn.label, quote(d))
			case isFirst:
				deps[r.Name] = append(deps[r.Name], d)
			}
		}
	}
	p.checkRefs(s, first, resources, data, outputs, providerRefs, deps)
	p.checkLocals(s, locals)
	p.checkMoved(s, first)
	p.checkStack(s, stackRefs)
	p.checkCallRepeat(s)
	p.checkDataRefs(firstData, data, resources, outputs)
	p.checkCallRefs(s, first, firstData)
	for _, c := range findCycles(nodes, deps) {
		p.add(first[c[0]].Pos, "dependency cycle: %s", c)
	}

	s.Resources = make([]*Resource, len(resources))
	for i, rn := range resources {
		s.Resources[i] = rn.r
	}
	for _, dn := range data {
		s.Data = append(s.Data, dn.d)
	}
	return s
}

func (p *parser) version(s *Spec, v *yaml.Node) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
		p.addf(v, "version must be an integer, not %s", describe(v))
		return
	}
	var n int64
	if err := v.Decode(&n); err != nil || n != specVersion {
		p.addf(v, "unsupported spec version %s (this bulwark reads version %d)", clip(v.Value), specVersion)
		return
	}
	s.Version = int(n)
}

// providers walks the providers: mapping; it returns the references their
// configs hold.
func (p *parser) providers(s *Spec, m *yaml.Node) *tmplCtx {
	tc := &tmplCtx{where: "a provider's config"}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if p.skip[k] {
			continue
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
			p.addf(k, "provider names must be strings, not %s", describe(k))
			continue
		}
		name := k.Value
		if first, dup := seen[name]; dup {
			p.addf(k, "duplicate provider %s (first at line %d)", quote(name), first.Line)
			continue
		}
		seen[name] = k
		if !nameRE.MatchString(name) {
			p.addf(k, "invalid provider name %s: must match %s", quote(name), namePattern)
		}
		pr := &Provider{Name: name, Source: name, Pos: posOf(k), FieldPos: map[string]Pos{}}
		s.Providers[name] = pr
		if p.skip[v] || isNull(v) {
			continue
		}
		if v.Kind != yaml.MappingNode {
			p.addf(v, "provider %s must be a mapping (with %s) or empty, not %s", quote(name), strings.Join(providerFields, ", "), describe(v))
			continue
		}
		prefix := fmt.Sprintf("provider %s: ", quote(name))
		p.fields(v, "in provider "+quote(name), providerFields, func(key string, k, v *yaml.Node) {
			pr.FieldPos[key] = posOf(v)
			switch key {
			case "source":
				if isNull(v) {
					return
				}
				if src, ok := p.str(v, prefix, "source"); ok {
					pr.Source = src
					switch {
					case strings.Contains(src, "/"):
						if !tfSourceRE.MatchString(src) {
							p.addf(v, "%sinvalid source %s: a Terraform provider's source address is [HOSTNAME/]NAMESPACE/TYPE", prefix, quote(src))
						}
						pr.Source = strings.ToLower(src)
					case !nameRE.MatchString(src):
						p.addf(v, "%sinvalid source %s: must match %s (a bulwark plugin), or be [HOSTNAME/]NAMESPACE/TYPE (a Terraform provider)", prefix, quote(src), namePattern)
					}
				}
			case "version":
				if isNull(v) {
					return
				}
				if ver, ok := p.str(v, prefix, "version"); ok {
					pr.Version = ver
				}
			case "config":
				if isNull(v) {
					return
				}
				if v.Kind != yaml.MappingNode {
					p.addf(v, "%sconfig must be a mapping, not %s", prefix, describe(v))
					return
				}
				p.tc = tc
				pr.Config, _ = p.mapping(v, pr.FieldPos)
				p.tc = nil
			}
		})
		if pr.Version != "" && !pr.Terraform() {
			if vn := fieldNode(v, "version"); vn != nil {
				p.addf(vn, "%sversion is for a Terraform provider (source: NAMESPACE/TYPE); bulwark's own plugins are pinned by bulwark.lock", prefix)
			}
		}
	}
	return tc
}

// maxQuoted bounds the bytes of a value from the spec that a message
// quotes: a long value repeated in many messages would make the problems
// far larger than the spec.
const maxQuoted = 64

// cutText returns s cut to maxQuoted bytes on a character boundary, and
// whether it was cut.
func cutText(s string) (string, bool) {
	if len(s) <= maxQuoted {
		return s, false
	}
	n := maxQuoted
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// clip returns s cut to maxQuoted bytes, marked with "..." when cut.
func clip(s string) string {
	c, cut := cutText(s)
	if cut {
		c += "..."
	}
	return c
}

// quote returns s as a Go string literal, cut to maxQuoted bytes and
// followed by "..." when cut.
func quote(s string) string {
	c, cut := cutText(s)
	q := strconv.Quote(c)
	if cut {
		q += "..."
	}
	return q
}

// maxListed bounds the names a message lists, so that a hostile spec cannot
// make its problems quadratic in its size.
const maxListed = 10

// nameList lists names for a message: "a, b, c", "none", or the first
// maxListed followed by how many more there are.
func nameList(names []string) string {
	switch {
	case len(names) == 0:
		return "none"
	case len(names) > maxListed:
		return fmt.Sprintf("%s and %d more", strings.Join(names[:maxListed], ", "), len(names)-maxListed)
	}
	return strings.Join(names, ", ")
}

// resourceNodes is a resource being parsed, with what the cross-checks need.
type resourceNodes struct {
	r      *Resource
	named  bool     // name: is a string
	label  string   // names the resource in messages: `resource "web"` or `resource #3`
	prefix string   // starts messages about the resource: label + ": "
	depPos []Pos    // position of each entry of r.DependsOn
	refs   *tmplCtx // the references in config
	each   *tmplCtx // the references in for_each
}

// resource walks one mapping under resources:; index is 1-based.
func (p *parser) resource(m *yaml.Node, index int) *resourceNodes {
	r := &Resource{
		Protection: protection.Ephemeral,
		OnFailure:  PolicyCompensate,
		Config:     map[string]any{},
		Pos:        posOf(m),
		FieldPos:   map[string]Pos{},
	}
	rn := &resourceNodes{r: r, refs: &tmplCtx{where: "config"}}
	e := entryFields{kind: "resource", Name: &r.Name, Type: &r.Type, Provider: &r.Provider, Explicit: &r.ExplicitProvider,
		Config: &r.Config, FieldPos: r.FieldPos, refs: rn.refs}
	rn.label, rn.prefix = e.start(m, "resource", index)
	p.fields(m, "in "+rn.label, resourceFields, func(key string, k, v *yaml.Node) {
		r.FieldPos[key] = posOf(v)
		switch key {
		case "name", "type", "provider", "config":
			p.entryField(&e, key, v)
		case "protection":
			if isNull(v) {
				return
			}
			if s, ok := p.str(v, rn.prefix, "protection"); ok {
				if prot, ok := protection.Parse(s); ok {
					r.Protection = prot
				} else {
					p.addf(v, "unknown protection level %s (want ephemeral, durable or protected)", quote(s))
				}
			}
		case "depends_on":
			p.dependsOn(rn, v)
		case "for_each":
			p.forEach(rn, v, false)
		case "count":
			p.forEach(rn, v, true)
		case "on_failure":
			if isNull(v) {
				return
			}
			if s, ok := p.str(v, rn.prefix, "on_failure"); ok {
				switch pol := FailurePolicy(s); pol {
				case PolicyCompensate, PolicyContinue, PolicyAbort:
					r.OnFailure = pol
				default:
					p.addf(v, "unknown on_failure policy %s (want compensate, continue or abort)", quote(s))
				}
			}
		case "import":
			if isNull(v) {
				return
			}
			if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!int" {
				// A numeric id, as written (leading zeros kept).
				r.Import = v.Value
				return
			}
			if id, ok := p.str(v, rn.prefix, "import"); ok {
				if strings.TrimSpace(id) == "" {
					p.addf(v, "%simport must be the id of the resource to take over, not empty", rn.prefix)
				} else {
					r.Import = id
				}
			}
		case "intervention":
			if isNull(v) {
				return
			}
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
				p.addf(v, "%sintervention must be a bool (true or false), not %s", rn.prefix, describe(v))
				return
			}
			if err := v.Decode(&r.Intervention); err != nil {
				p.addf(v, "%sintervention must be a bool (true or false), not %s", rn.prefix, quote(v.Value))
			}
		}
	})
	rn.named = e.named
	p.entryRequired(m, &e)
	return rn
}

// entryFields are the fields a resource and a data entry share, being
// parsed: where each goes, and what was seen.
type entryFields struct {
	kind             string // "resource" or "data", in messages
	Name, Type       *string
	Provider         *string
	Explicit         *bool
	Config           *map[string]any
	FieldPos         map[string]Pos
	refs             *tmplCtx // the references in config
	label, prefix    string
	named            bool // name: is a string
	hasName, hasType bool
}

// start names the entry for messages (`resource "web"`, `resource #3`)
// from its name when that is a string, else its position; it returns the
// label and the prefix of messages about it.
func (e *entryFields) start(m *yaml.Node, unnamed string, index int) (label, prefix string) {
	e.label = fmt.Sprintf("%s #%d", unnamed, index)
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k, v := m.Content[i], m.Content[i+1]; k.Value == "name" && isString(k) && isString(v) {
			e.label = e.kind + " " + quote(v.Value)
			break
		}
	}
	e.prefix = e.label + ": "
	return e.label, e.prefix
}

// entryField parses one of the shared fields: name, type, provider, config.
func (p *parser) entryField(e *entryFields, key string, v *yaml.Node) {
	switch key {
	case "name":
		e.hasName = true
		if name, ok := p.str(v, e.prefix, "name"); ok {
			*e.Name, e.named = name, true
			if !nameRE.MatchString(name) {
				p.addf(v, "invalid %s name %s: must match %s", e.kind, quote(name), namePattern)
			}
		}
	case "type":
		e.hasType = true
		if t, ok := p.str(v, e.prefix, "type"); ok {
			*e.Type = t
			if strings.TrimSpace(t) == "" {
				p.addf(v, "%stype must not be empty", e.prefix)
			}
		}
	case "provider":
		if isNull(v) {
			return
		}
		if name, ok := p.str(v, e.prefix, "provider"); ok {
			*e.Provider, *e.Explicit = name, true
		}
	case "config":
		if isNull(v) {
			return
		}
		if v.Kind != yaml.MappingNode {
			p.addf(v, "%sconfig must be a mapping, not %s", e.prefix, describe(v))
			return
		}
		p.tc = e.refs
		*e.Config, _ = p.mapping(v, e.FieldPos)
		p.tc = nil
	}
}

// entryRequired reports a missing name or type.
func (p *parser) entryRequired(m *yaml.Node, e *entryFields) {
	if !e.hasName {
		p.addf(m, "%s is missing required field \"name\"", e.label)
	}
	if !e.hasType {
		p.addf(m, "%s is missing required field \"type\"", e.label)
	}
}

func (p *parser) dependsOn(rn *resourceNodes, v *yaml.Node) {
	if isNull(v) {
		return
	}
	if v.Kind != yaml.SequenceNode {
		hint := ""
		if isString(v) {
			hint = fmt.Sprintf(" (write depends_on: [%s])", clip(v.Value))
		}
		p.addf(v, "%sdepends_on must be a list of resource names, not %s%s", rn.prefix, describe(v), hint)
		return
	}
	seen := map[string]bool{}
	for _, e := range v.Content {
		if p.skip[e] {
			continue
		}
		if !isString(e) {
			p.addf(e, "%sdepends_on entries must be resource names (strings), not %s", rn.prefix, describe(e))
			continue
		}
		if seen[e.Value] {
			p.addf(e, "%sduplicate dependency %s in depends_on", rn.prefix, quote(e.Value))
			continue
		}
		seen[e.Value] = true
		rn.r.DependsOn = append(rn.r.DependsOn, e.Value)
		rn.depPos = append(rn.depPos, posOf(e))
	}
}

// fieldNode is the value node of key in the mapping m, or nil.
func fieldNode(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
