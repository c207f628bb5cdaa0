package spec

import (
	"math/big"
	"net/netip"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/gocty"
)

// The CIDR functions, as Terraform defines them (cidrhost, cidrnetmask,
// cidrsubnet, cidrsubnets), written with net/netip. Addresses are
// computed as integers of the address's width (32 or 128 bits).

var cidrHostFunc = function.New(&function.Spec{
	Description: "Returns the address of host number hostnum in prefix (negative counts from the end).",
	Params: []function.Parameter{
		{Name: "prefix", Type: cty.String},
		{Name: "hostnum", Type: cty.Number},
	},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := parseCIDR(args[0], 0)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		var hostnum int64
		if err := gocty.FromCtyValue(args[1], &hostnum); err != nil {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(1, "hostnum must be a whole number: %s", err)
		}
		hostBits := p.Addr().BitLen() - p.Bits()
		size := new(big.Int).Lsh(big.NewInt(1), uint(hostBits))
		n := big.NewInt(hostnum)
		if n.Sign() < 0 {
			n.Add(n, size)
		}
		if n.Sign() < 0 || n.Cmp(size) >= 0 {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(1, "prefix %s has %s host addresses; host number %d is not one of them", p, size, hostnum)
		}
		return cty.StringVal(addrPlus(p.Addr(), n).String()), nil
	},
})

var cidrNetmaskFunc = function.New(&function.Spec{
	Description: "Returns the netmask of an IPv4 prefix in dotted-decimal form.",
	Params:      []function.Parameter{{Name: "prefix", Type: cty.String}},
	Type:        function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := parseCIDR(args[0], 0)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		if !p.Addr().Is4() {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "cidrnetmask works on IPv4 prefixes only, not %s", p)
		}
		mask := netip.PrefixFrom(netip.AddrFrom4([4]byte{255, 255, 255, 255}), p.Bits()).Masked().Addr()
		return cty.StringVal(mask.String()), nil
	},
})

var cidrSubnetFunc = function.New(&function.Spec{
	Description: "Returns subnet number netnum of prefix, newbits longer.",
	Params: []function.Parameter{
		{Name: "prefix", Type: cty.String},
		{Name: "newbits", Type: cty.Number},
		{Name: "netnum", Type: cty.Number},
	},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := parseCIDR(args[0], 0)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		var newbits, netnum int64
		if err := gocty.FromCtyValue(args[1], &newbits); err != nil {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(1, "newbits must be a whole number: %s", err)
		}
		if err := gocty.FromCtyValue(args[2], &netnum); err != nil {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(2, "netnum must be a whole number: %s", err)
		}
		s, err := subnet(p, newbits, big.NewInt(netnum))
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		return cty.StringVal(s.String()), nil
	},
})

var cidrSubnetsFunc = function.New(&function.Spec{
	Description: "Returns consecutive subnets of prefix, one per newbits, each aligned to its size.",
	Params:      []function.Parameter{{Name: "prefix", Type: cty.String}},
	VarParam:    &function.Parameter{Name: "newbits", Type: cty.Number},
	Type:        function.StaticReturnType(cty.List(cty.String)),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := parseCIDR(args[0], 0)
		if err != nil {
			return cty.UnknownVal(cty.List(cty.String)), err
		}
		if len(args) == 1 {
			return cty.ListValEmpty(cty.String), nil
		}
		width := p.Addr().BitLen()
		base := addrInt(p.Addr())
		end := new(big.Int).Add(base, new(big.Int).Lsh(big.NewInt(1), uint(width-p.Bits())))
		next := new(big.Int).Set(base)
		out := make([]cty.Value, 0, len(args)-1)
		for i, a := range args[1:] {
			var newbits int64
			if err := gocty.FromCtyValue(a, &newbits); err != nil {
				return cty.UnknownVal(cty.List(cty.String)), function.NewArgErrorf(i+1, "newbits must be a whole number: %s", err)
			}
			bits := int64(p.Bits()) + newbits
			if newbits < 1 || bits > int64(width) {
				return cty.UnknownVal(cty.List(cty.String)), function.NewArgErrorf(i+1, "newbits %d would make a /%d prefix: want 1 to %d more bits than /%d", newbits, bits, width-p.Bits(), p.Bits())
			}
			size := new(big.Int).Lsh(big.NewInt(1), uint(int64(width)-bits))
			// Align next up to a multiple of size.
			rem := new(big.Int).Mod(new(big.Int).Sub(next, base), size)
			if rem.Sign() != 0 {
				next.Add(next, new(big.Int).Sub(size, rem))
			}
			last := new(big.Int).Add(next, size)
			if last.Cmp(end) > 0 {
				return cty.UnknownVal(cty.List(cty.String)), function.NewArgErrorf(i+1, "not enough room in %s for a /%d after the subnets before it", p, bits)
			}
			out = append(out, cty.StringVal(netip.PrefixFrom(intAddr(next, p.Addr().Is4()), int(bits)).String()))
			next = last
		}
		return cty.ListVal(out), nil
	},
})

// parseCIDR parses argument arg of a CIDR function: a prefix in CIDR
// notation, its host bits cleared as Terraform does.
func parseCIDR(v cty.Value, arg int) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(v.AsString())
	if err != nil {
		return netip.Prefix{}, function.NewArgErrorf(arg, "invalid CIDR prefix %q: want ADDRESS/BITS such as 10.0.0.0/16", v.AsString())
	}
	return p.Masked(), nil
}

// subnet returns subnet netnum of p, newbits longer.
func subnet(p netip.Prefix, newbits int64, netnum *big.Int) (netip.Prefix, error) {
	width := int64(p.Addr().BitLen())
	bits := int64(p.Bits()) + newbits
	if newbits < 0 || bits > width {
		return netip.Prefix{}, function.NewArgErrorf(1, "newbits %d would make a /%d prefix: at most %d more bits fit in /%d", newbits, bits, width-int64(p.Bits()), p.Bits())
	}
	count := new(big.Int).Lsh(big.NewInt(1), uint(newbits))
	if netnum.Sign() < 0 || netnum.Cmp(count) >= 0 {
		return netip.Prefix{}, function.NewArgErrorf(2, "prefix %s has %s subnets of /%d; netnum %s is not one of them", p, count, bits, netnum)
	}
	off := new(big.Int).Lsh(netnum, uint(width-bits))
	return netip.PrefixFrom(addrPlus(p.Addr(), off), int(bits)), nil
}

func addrInt(a netip.Addr) *big.Int {
	if a.Is4() {
		b := a.As4()
		return new(big.Int).SetBytes(b[:])
	}
	b := a.As16()
	return new(big.Int).SetBytes(b[:])
}

func intAddr(n *big.Int, is4 bool) netip.Addr {
	if is4 {
		var b [4]byte
		n.FillBytes(b[:])
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	n.FillBytes(b[:])
	return netip.AddrFrom16(b)
}

func addrPlus(a netip.Addr, n *big.Int) netip.Addr {
	return intAddr(new(big.Int).Add(addrInt(a), n), a.Is4())
}
