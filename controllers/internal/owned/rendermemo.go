package owned

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Memo is what a backend's last render wrote: the fingerprint of
// what it was rendered from (the backend's identity and generation, its
// resolved inputs and its configMapName), the names of its two objects
// and their content hashes. With it, a reconcile of the same inputs (every
// periodic probe's) checks the objects' watched metadata instead of
// rendering and formatting the files again only to find the same hash: a
// few hundred bytes per backend instead of the CPU and garbage of a
// render at every probe.
type Memo struct {
	Inputs                    string
	ConfigMapName, SecretName string
	ConfigMapHash, SecretHash string
}

// Memos are the memos of a reconciler's backends.
type Memos struct {
	mu    sync.Mutex
	memos map[WriterKey]Memo
}

// NewMemos returns memos of no backend.
func NewMemos() *Memos { return &Memos{memos: map[WriterKey]Memo{}} }

// Get returns writer's memo.
func (m *Memos) Get(writer WriterKey) (Memo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	memo, ok := m.memos[writer]
	return memo, ok
}

// Set records writer's memo.
func (m *Memos) Set(writer WriterKey, memo Memo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.memos[writer] = memo
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
