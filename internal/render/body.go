package render

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"
)

// body is the content of a backend block, independent of its syntax: the
// attributes and the nested (unlabelled) blocks, each kept in the order it
// was first set so that every format writes them in the same, fixed order.
type body struct {
	items []item
	// blockTypes are the names the backend's schema declares as nested
	// blocks, present or not. An override of such a name sets the
	// block's attributes (see setBlock): Terraform reads the name as a
	// block whatever the syntax, so an attribute of that name would mean
	// something else in HCL than in JSON.
	blockTypes map[string]bool
}

// item is one attribute (block == nil) or one nested block of a body.
type item struct {
	name  string
	value cty.Value
	block *body
}

// set sets attribute name to v, replacing an existing attribute in place or
// appending a new one. It fails when name is a nested block.
func (b *body) set(name string, v cty.Value) error {
	for i := range b.items {
		if b.items[i].name != name {
			continue
		}
		if b.items[i].block != nil {
			return fmt.Errorf("%q is a block, not an attribute", name)
		}
		b.items[i].value = v
		return nil
	}
	b.items = append(b.items, item{name: name, value: v})
	return nil
}

// isBlock reports whether name is a nested block of b: one b holds, or one
// the schema declares.
func (b *body) isBlock(name string) bool {
	if b.blockTypes[name] {
		return true
	}
	for _, it := range b.items {
		if it.name == name {
			return it.block != nil
		}
	}
	return false
}

// addString appends the string attribute name. add* are for the typed
// attributes, written once each into a fresh body, so they never collide.
func (b *body) addString(name, s string) {
	b.items = append(b.items, item{name: name, value: cty.StringVal(s)})
}

// addInt appends the number attribute name.
func (b *body) addInt(name string, n int32) {
	b.items = append(b.items, item{name: name, value: cty.NumberIntVal(int64(n))})
}

// addBool appends the bool attribute name.
func (b *body) addBool(name string, v bool) {
	b.items = append(b.items, item{name: name, value: cty.BoolVal(v)})
}

// addBlock appends the nested block name with content nb.
func (b *body) addBlock(name string, nb *body) {
	b.items = append(b.items, item{name: name, block: nb})
}

// nested returns the nested block name, appending an empty one when there
// is none. It fails when name is an attribute.
func (b *body) nested(name string) (*body, error) {
	for _, it := range b.items {
		if it.name != name {
			continue
		}
		if it.block == nil {
			return nil, fmt.Errorf("%q is an attribute, not a block", name)
		}
		return it.block, nil
	}
	nb := &body{}
	b.items = append(b.items, item{name: name, block: nb})
	return nb, nil
}

// attributes returns the attributes of b in order.
func (b *body) attributes() []item {
	var out []item
	for _, it := range b.items {
		if it.block == nil {
			out = append(out, it)
		}
	}
	return out
}

// blocks returns the nested blocks of b in order.
func (b *body) blocks() []item {
	var out []item
	for _, it := range b.items {
		if it.block != nil {
			out = append(out, it)
		}
	}
	return out
}
