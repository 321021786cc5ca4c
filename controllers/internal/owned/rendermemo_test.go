package owned

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/infrastate/backend-operator/internal/contenthash"
	"github.com/infrastate/backend-operator/internal/render"
)

// TestMemos checks that Memos give back every memo as it was set, packed
// or kept as it is, and forget it.
func TestMemos(t *testing.T) {
	writer := WriterKey{Kind: "HttpBackend", NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "web"}}
	usual := Memo{
		Inputs:        contenthash.Sum([]byte("inputs")),
		ConfigMapName: render.DefaultConfigMapName("web"), SecretName: render.CredentialsSecretName("web"),
		ConfigMapHash: contenthash.ConfigMap(map[string]string{"a": "b"}, nil), SecretHash: contenthash.Secret(map[string][]byte{"c": []byte("d")}),
	}
	edit := func(f func(*Memo)) Memo { m := usual; f(&m); return m }
	cases := map[string]struct {
		memo   Memo
		packed bool
	}{
		"as the operator writes it": {memo: usual, packed: true},
		"a configMapName":           {memo: edit(func(m *Memo) { m.ConfigMapName = "files" })},
		"another Secret name":       {memo: edit(func(m *Memo) { m.SecretName = "other" })},
		"upper case inputs":         {memo: edit(func(m *Memo) { m.Inputs = strings.ToUpper(m.Inputs) })},
		"short inputs":              {memo: edit(func(m *Memo) { m.Inputs = m.Inputs[1:] })},
		"a hash of another form":    {memo: edit(func(m *Memo) { m.SecretHash = "sha256:1" })},
		"a hash without its prefix": {memo: edit(func(m *Memo) { m.ConfigMapHash = strings.TrimPrefix(m.ConfigMapHash, "sha256:") })},
		"no hash":                   {memo: edit(func(m *Memo) { m.ConfigMapHash = "" })},
		"nothing but the names":     {memo: Memo{ConfigMapName: usual.ConfigMapName, SecretName: usual.SecretName}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := NewMemos()
			m.Set(writer, tc.memo)
			got, ok := m.Get(writer)
			if !ok {
				t.Fatal("Get found no memo")
			}
			if diff := cmp.Diff(tc.memo, got); diff != "" {
				t.Errorf("memo (-want +got):\n%s", diff)
			}
			if packed := m.memos[writer].other == nil; packed != tc.packed {
				t.Errorf("packed: %v, want %v", packed, tc.packed)
			}
			m.Forget(writer)
			if _, ok := m.Get(writer); ok {
				t.Error("Get found a memo forgotten")
			}
		})
	}
}
