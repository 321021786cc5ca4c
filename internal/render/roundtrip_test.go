package render

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
)

// The round-trip tests decode the rendered files with the HCL library the
// way Terraform decodes a backend block (no evaluation context: no
// variables, no functions) and check that every format yields exactly the
// values that were rendered. Together with the real Terraform runs in
// terraform_test.go this shows that no value can change or escape.

// bodyValue is the value of b as Terraform reads it: an object of its
// attributes, nested blocks as objects.
func bodyValue(b *body) cty.Value {
	attrs := map[string]cty.Value{}
	for _, it := range b.items {
		if it.block != nil {
			attrs[it.name] = bodyValue(it.block)
		} else {
			attrs[it.name] = it.value
		}
	}
	return cty.ObjectVal(attrs)
}

// decodeHCLBody decodes an HCL body without an evaluation context, nested
// blocks as objects.
func decodeHCLBody(t *testing.T, b *hclsyntax.Body) cty.Value {
	t.Helper()
	attrs := map[string]cty.Value{}
	for name, a := range b.Attributes {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			t.Fatalf("decoding attribute %s: %s", name, diags.Error())
		}
		attrs[name] = v
	}
	for _, blk := range b.Blocks {
		if _, dup := attrs[blk.Type]; dup {
			t.Fatalf("block %s is repeated or is also an attribute", blk.Type)
		}
		attrs[blk.Type] = decodeHCLBody(t, blk.Body)
	}
	return cty.ObjectVal(attrs)
}

// decodeBackendTF decodes backend.tf: the body of terraform.backend.<type>.
func decodeBackendTF(t *testing.T, src []byte, backendType string) cty.Value {
	t.Helper()
	f, diags := hclsyntax.ParseConfig(src, BackendTFKey, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parsing %s: %s", BackendTFKey, diags.Error())
	}
	root := f.Body.(*hclsyntax.Body)
	if len(root.Attributes) != 0 || len(root.Blocks) != 1 || root.Blocks[0].Type != "terraform" {
		t.Fatalf("%s must hold exactly one terraform block", BackendTFKey)
	}
	tf := root.Blocks[0].Body
	if len(tf.Attributes) != 0 || len(tf.Blocks) != 1 || tf.Blocks[0].Type != "backend" {
		t.Fatalf("the terraform block must hold exactly one backend block")
	}
	if got := tf.Blocks[0].Labels; len(got) != 1 || got[0] != backendType {
		t.Fatalf("backend labels = %q, want [%q]", got, backendType)
	}
	return decodeHCLBody(t, tf.Blocks[0].Body)
}

// decodeTFBackend decodes backend.tfbackend.
func decodeTFBackend(t *testing.T, src []byte) cty.Value {
	t.Helper()
	f, diags := hclsyntax.ParseConfig(src, BackendTFBackendKey, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parsing %s: %s", BackendTFBackendKey, diags.Error())
	}
	return decodeHCLBody(t, f.Body.(*hclsyntax.Body))
}

// decodeBackendTFJSON decodes backend.tf.json as Terraform does: through
// the block schema of terraform and backend, then the backend body without
// an evaluation context (strings are read verbatim).
func decodeBackendTFJSON(t *testing.T, src []byte, backendType string) cty.Value {
	t.Helper()
	f, diags := hcljson.Parse(src, BackendTFJSONKey)
	if diags.HasErrors() {
		t.Fatalf("parsing %s: %s", BackendTFJSONKey, diags.Error())
	}
	root, diags := f.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "terraform"}}})
	if diags.HasErrors() || len(root.Blocks) != 1 {
		t.Fatalf("%s must hold one terraform block: %s", BackendTFJSONKey, diags.Error())
	}
	tf, diags := root.Blocks[0].Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "backend", LabelNames: []string{"type"}}}})
	if diags.HasErrors() || len(tf.Blocks) != 1 {
		t.Fatalf("the terraform block must hold one backend block: %s", diags.Error())
	}
	if got := tf.Blocks[0].Labels; got[0] != backendType {
		t.Fatalf("backend label = %q, want %q", got[0], backendType)
	}
	attrs, diags := tf.Blocks[0].Body.JustAttributes()
	if diags.HasErrors() {
		t.Fatalf("decoding the backend body: %s", diags.Error())
	}
	vals := map[string]cty.Value{}
	for name, a := range attrs {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			t.Fatalf("decoding attribute %s: %s", name, diags.Error())
		}
		vals[name] = v
	}
	return cty.ObjectVal(vals)
}

// checkRoundTrip decodes the three files and compares each with want.
func checkRoundTrip(t *testing.T, backendType string, f Files, want cty.Value) {
	t.Helper()
	got := map[string]cty.Value{
		BackendTFKey:        decodeBackendTF(t, f.BackendTF, backendType),
		BackendTFBackendKey: decodeTFBackend(t, f.BackendTFBackend),
		BackendTFJSONKey:    decodeBackendTFJSON(t, f.BackendTFJSON, backendType),
	}
	for name, v := range got {
		if !v.RawEquals(want) {
			t.Errorf("%s decodes to\n%#v\nwant\n%#v", name, v, want)
		}
	}
}

func TestHTTPRoundTrip(t *testing.T) {
	for name, spec := range httpCases() {
		t.Run(name, func(t *testing.T) {
			checkHTTPRoundTrip(t, spec)
		})
	}
}

func TestCosRoundTrip(t *testing.T) {
	for name, spec := range cosCases() {
		t.Run(name, func(t *testing.T) {
			f, err := CosFiles(spec, testRegion)
			if err != nil {
				t.Fatal(err)
			}
			b, err := cosBody(spec, testRegion)
			if err != nil {
				t.Fatal(err)
			}
			if err := applyOverrides(b, spec.Overrides); err != nil {
				t.Fatal(err)
			}
			checkRoundTrip(t, "cos", f, bodyValue(b))
		})
	}
}

// TestEscapedStringsReadBack checks, independently of the internal model,
// that the escaping-heavy strings come back exactly as the Go strings that
// went in.
func TestEscapedStringsReadBack(t *testing.T) {
	f, err := HTTPFiles(httpCases()["escaping_username"])
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]cty.Value{
		BackendTFKey:        decodeBackendTF(t, f.BackendTF, "http"),
		BackendTFBackendKey: decodeTFBackend(t, f.BackendTFBackend),
		BackendTFJSONKey:    decodeBackendTFJSON(t, f.BackendTFJSON, "http"),
	} {
		if got := v.GetAttr("username").AsString(); got != escapingString {
			t.Errorf("%s: username = %q, want %q", name, got, escapingString)
		}
	}

	f, err = CosFiles(cosCases()["escaping"], testRegion)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]cty.Value{
		BackendTFKey:        decodeBackendTF(t, f.BackendTF, "cos"),
		BackendTFBackendKey: decodeTFBackend(t, f.BackendTFBackend),
		BackendTFJSONKey:    decodeBackendTFJSON(t, f.BackendTFJSON, "cos"),
	} {
		if got := v.GetAttr("prefix").AsString(); got != escapingString {
			t.Errorf("%s: prefix = %q, want %q", name, got, escapingString)
		}
		if got := v.GetAttr("assume_role").GetAttr("policy").AsString(); got != escapingString {
			t.Errorf("%s: assume_role.policy = %q, want %q", name, got, escapingString)
		}
	}
}

// checkHTTPRoundTrip renders spec with HTTPFiles, checks that every file
// reads back as the body the spec renders from, and returns the files.
func checkHTTPRoundTrip(t *testing.T, spec backendsv1alpha1.HttpBackendSpec) Files {
	t.Helper()
	f, err := HTTPFiles(spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := httpBody(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := applyOverrides(b, spec.Overrides); err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, "http", f, bodyValue(b))
	return f
}
