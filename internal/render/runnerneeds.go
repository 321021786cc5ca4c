package render

import (
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

// sortedNeeds returns needs sorted, without duplicates.
func sortedNeeds(needs []FeatureID) []FeatureID {
	slices.Sort(needs)
	return slices.Compact(needs)
}

// attributeFeatures are the attributes of the runner table, per backend
// type, by their path in the backend block ("block.attribute" inside a
// nested block).
var attributeFeatures = map[string]map[string]FeatureID{
	"cos": {
		"endpoint":                FeatureCosEndpoint,
		"domain":                  FeatureCosDomain,
		"accelerate":              FeatureCosAccelerate,
		"assume_role":             FeatureCosAssumeRole,
		"assume_role.external_id": FeatureCosExternalID,
	},
	"http": {
		"headers": FeatureHTTPHeaders,
	},
}

// bodyNeeds returns the features of the runner table that the attributes
// of b, a backend block of backendType, need. An attribute counts whatever
// its value, null included: a runner that does not know it refuses it.
func bodyNeeds(backendType string, b *body) []FeatureID {
	known := attributeFeatures[backendType]
	var needs []FeatureID
	var walk func(prefix string, b *body)
	walk = func(prefix string, b *body) {
		for _, it := range b.items {
			path := prefix + it.name
			if id, ok := known[path]; ok {
				needs = append(needs, id)
			}
			if it.block != nil {
				walk(path+".", it.block)
			}
		}
	}
	walk("", b)
	return needs
}

// anyString reports whether pred holds for a string value of b, at any
// depth.
func (b *body) anyString(pred func(string) bool) bool {
	for _, it := range b.items {
		if it.block != nil {
			if it.block.anyString(pred) {
				return true
			}
			continue
		}
		if valueHasString(it.value, pred) {
			return true
		}
	}
	return false
}

// valueHasString reports whether pred holds for v, or a value inside it,
// that is a string.
func valueHasString(v cty.Value, pred func(string) bool) bool {
	if !v.IsKnown() || v.IsNull() {
		return false
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return pred(v.AsString())
	case ty.IsObjectType() || ty.IsMapType() || ty.IsTupleType() || ty.IsListType() || ty.IsSetType():
		for it := v.ElementIterator(); it.Next(); {
			if _, ev := it.Element(); valueHasString(ev, pred) {
				return true
			}
		}
	}
	return false
}

// hasTemplateIntroducer reports whether s holds "${" or "%{", which a
// runner that evaluates backend.tf.json reads as a template.
func hasTemplateIntroducer(s string) bool {
	return strings.Contains(s, "${") || strings.Contains(s, "%{")
}

// changedByEscaping reports whether escapeTemplateSequences changes s.
func changedByEscaping(s string) bool {
	return escapeTemplateSequences(s) != s
}
