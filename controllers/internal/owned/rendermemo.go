package owned

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/infrastate/backend-operator/internal/contenthash"
	"github.com/infrastate/backend-operator/internal/render"
)

// Memo is what a backend's last render wrote: the fingerprint of
// what it was rendered from (the backend's identity and generation, its
// resolved inputs and its configMapName), the names of its two objects
// and their content hashes. With it, a reconcile of the same inputs (every
// periodic probe's) checks the objects' watched metadata instead of
// rendering and formatting the files again only to find the same hash:
// about a hundred bytes per backend as Memos keep it (see packedMemo)
// instead of the CPU and garbage of a render at every probe.
type Memo struct {
	Inputs                    string
	ConfigMapName, SecretName string
	ConfigMapHash, SecretHash string
}

// Memos are the memos of a reconciler's backends.
type Memos struct {
	mu    sync.Mutex
	memos map[WriterKey]*packedMemo
}

// packedMemo is a Memo as Memos keep it: the fingerprint and the content
// hashes as bytes rather than 64- and 71-character strings, and the
// default names of the backend's objects not at all (they derive from its
// name), about 110 bytes rather than 400; a memo of another form is kept
// as it is (other).
type packedMemo struct {
	inputs, configMapHash, secretHash contenthash.Digest
	other                             *Memo
}

// NewMemos returns memos of no backend.
func NewMemos() *Memos { return &Memos{memos: map[WriterKey]*packedMemo{}} }

// Get returns writer's memo.
func (m *Memos) Get(writer WriterKey) (Memo, bool) {
	m.mu.Lock()
	p, ok := m.memos[writer]
	m.mu.Unlock()
	switch {
	case !ok:
		return Memo{}, false
	case p.other != nil:
		return *p.other, true
	}
	return Memo{
		Inputs:        p.inputs.Sum(),
		ConfigMapName: render.DefaultConfigMapName(writer.Name), SecretName: render.CredentialsSecretName(writer.Name),
		ConfigMapHash: p.configMapHash.Hash(),
		SecretHash:    p.secretHash.Hash(),
	}, true
}

// Set records writer's memo.
func (m *Memos) Set(writer WriterKey, memo Memo) {
	p := packMemo(writer, memo)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.memos[writer] = p
}

// packMemo packs writer's memo: its fingerprint and hashes as the
// operator makes them (see contenthash.ParseSum, contenthash.ParseHash),
// its names the defaults; any other memo is kept as it is.
func packMemo(writer WriterKey, memo Memo) *packedMemo {
	inputs, inputsOK := contenthash.ParseSum(memo.Inputs)
	cmHash, cmOK := contenthash.ParseHash(memo.ConfigMapHash)
	secretHash, secretOK := contenthash.ParseHash(memo.SecretHash)
	if inputsOK && cmOK && secretOK &&
		memo.ConfigMapName == render.DefaultConfigMapName(writer.Name) && memo.SecretName == render.CredentialsSecretName(writer.Name) {
		return &packedMemo{inputs: inputs, configMapHash: cmHash, secretHash: secretHash}
	}
	return &packedMemo{other: &memo}
}

// Forget drops writer's memo: it is gone, or its last render did not
// complete.
func (m *Memos) Forget(writer WriterKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.memos, writer)
}

// AsWritten reports whether the watched metadata shows the kind object
// name of writer (whose UID is owner) as the operator last wrote or
// checked it: controlled by the owner, at the recorded version, with
// content hash hash.
func (w Writer) AsWritten(ctx context.Context, writer WriterKey, owner types.UID, kind, name, hash string) bool {
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}}
	if err := w.Metadata.Get(ctx, types.NamespacedName{Namespace: writer.Namespace, Name: name}, meta); err != nil {
		return false
	}
	return asLeft(meta, owner, w.Versions.get(writer, writtenKey{kind: kind, name: name}), hash)
}
