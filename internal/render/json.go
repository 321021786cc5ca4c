package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

// backendJSON renders backend.tf.json:
// {"terraform":{"backend":{"<type>":{b}}}}, indented by two spaces and
// ending with a newline. Object members keep the order of b (attributes,
// then nested blocks); members of object values come sorted by name, as cty
// keeps them.
//
// Strings are written verbatim, without doubling "${" or "%{", unless
// escape is set: Terraform (and OpenTofu before 1.8) decodes backend blocks
// with no evaluation context, and the HCL JSON decoder returns a string
// literally (does not parse it as a template) when there is none; doubling
// them would make it read "$${". OpenTofu 1.8 and later evaluates backend
// blocks, so its decoder parses every string as a template: for it
// (escape), "${" and "%{" are written "$${" and "%%{".
func backendJSON(backendType string, b *body, escape bool) ([]byte, error) {
	w := jsonWriter{escapeTemplates: escape}
	var buf bytes.Buffer
	buf.WriteString(`{"terraform":{"backend":{`)
	if err := writeJSONString(&buf, backendType); err != nil {
		return nil, err
	}
	buf.WriteByte(':')
	if err := w.body(&buf, b); err != nil {
		return nil, err
	}
	buf.WriteString(`}}}`)

	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("indenting %s: %w", BackendTFJSONKey, err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// jsonWriter writes the backend block's content as JSON.
type jsonWriter struct {
	// escapeTemplates doubles "${" and "%{" in string values.
	escapeTemplates bool
}

// body writes b as a JSON object: attributes, then nested blocks as
// objects.
func (w jsonWriter) body(buf *bytes.Buffer, b *body) error {
	buf.WriteByte('{')
	first := true
	member := func(name string) error {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		if err := writeJSONString(buf, name); err != nil {
			return err
		}
		buf.WriteByte(':')
		return nil
	}
	for _, a := range b.attributes() {
		if err := member(a.name); err != nil {
			return err
		}
		if err := w.value(buf, a.value); err != nil {
			return fmt.Errorf("attribute %q: %w", a.name, err)
		}
	}
	for _, nb := range b.blocks() {
		if err := member(nb.name); err != nil {
			return err
		}
		if err := w.body(buf, nb.block); err != nil {
			return fmt.Errorf("block %q: %w", nb.name, err)
		}
	}
	buf.WriteByte('}')
	return nil
}

// value writes the cty value v as JSON. Objects and maps become objects,
// lists, sets and tuples become arrays, and numbers keep their full
// precision. Object keys are written as they are: they are attribute
// names, never templates.
func (w jsonWriter) value(buf *bytes.Buffer, v cty.Value) error {
	if !v.IsKnown() {
		return fmt.Errorf("unknown value")
	}
	if v.IsNull() {
		buf.WriteString("null")
		return nil
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		if w.escapeTemplates {
			return writeJSONString(buf, escapeTemplateSequences(v.AsString()))
		}
		return writeJSONString(buf, v.AsString())
	case ty == cty.Number:
		buf.WriteString(v.AsBigFloat().Text('f', -1))
		return nil
	case ty == cty.Bool:
		if v.True() {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
		return nil
	case ty.IsObjectType() || ty.IsMapType():
		buf.WriteByte('{')
		for i, it := 0, v.ElementIterator(); it.Next(); i++ {
			k, ev := it.Element()
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSONString(buf, k.AsString()); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := w.value(buf, ev); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case ty.IsTupleType() || ty.IsListType() || ty.IsSetType():
		buf.WriteByte('[')
		for i, it := 0, v.ElementIterator(); it.Next(); i++ {
			_, ev := it.Element()
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := w.value(buf, ev); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	default:
		return fmt.Errorf("values of type %s cannot be written as JSON", ty.FriendlyName())
	}
}

// writeJSONString writes s as a JSON string with encoding/json, without
// escaping <, > and & (which JSON does not require).
func writeJSONString(buf *bytes.Buffer, s string) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("encoding a JSON string: %w", err)
	}
	buf.Truncate(buf.Len() - 1) // Encode ends with a newline
	return nil
}

// escapeTemplateSequences doubles the "$" of every "${" and the "%" of every
// "%{" in s, as HCL's own writer does for quoted strings, and writes a
// carriage return not followed by a line feed as the interpolation
// ${"\r"}, so that a template parser reads s back: after a lone carriage
// return HCL's template scanner no longer reads "$${" as an escape.
func escapeTemplateSequences(s string) string {
	if !hasTemplateIntroducer(s) && !strings.Contains(s, "\r") {
		return s
	}
	var b strings.Builder
	for i := range len(s) {
		if (s[i] == '$' || s[i] == '%') && i+1 < len(s) && s[i+1] == '{' {
			b.WriteByte(s[i])
		}
		if s[i] == '\r' && (i+1 == len(s) || s[i+1] != '\n') {
			b.WriteString(`${"\r"}`)
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
