package render

import (
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// backendHCL renders backend.tf: `terraform { backend "<type>" { b } }`.
func backendHCL(backendType string, b *body) []byte {
	f := hclwrite.NewEmptyFile()
	tf := f.Body().AppendNewBlock("terraform", nil)
	backend := tf.Body().AppendNewBlock("backend", []string{backendType})
	writeHCLBody(backend.Body(), b)
	return f.Bytes()
}

// tfbackendHCL renders backend.tfbackend: the content of b at top level.
func tfbackendHCL(b *body) []byte {
	f := hclwrite.NewEmptyFile()
	writeHCLBody(f.Body(), b)
	return f.Bytes()
}

// writeHCLBody writes the attributes of b, then its nested blocks, each
// block preceded by an empty line. hclwrite renders every value as a
// literal: strings are quoted with quotes, backslashes and control
// characters escaped and "${" and "%{" doubled, so that no value can end
// its string or start a template sequence.
func writeHCLBody(dst *hclwrite.Body, b *body) {
	for _, a := range b.attributes() {
		dst.SetAttributeValue(a.name, a.value)
	}
	for _, nb := range b.blocks() {
		if len(dst.Attributes()) > 0 || len(dst.Blocks()) > 0 {
			dst.AppendNewline()
		}
		writeHCLBody(dst.AppendNewBlock(nb.name, nil).Body(), nb.block)
	}
}
