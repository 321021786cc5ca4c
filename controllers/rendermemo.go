package controllers

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// renderMemo is what a backend's last render wrote: the fingerprint of
// what it was rendered from (the backend's identity and generation, its
// resolved inputs and its configMapName), the names of its two objects
// and their content hashes. With it, a reconcile of the same inputs (every
// periodic probe's) checks the objects' watched metadata instead of
// rendering and formatting the files again only to find the same hash: a
// few hundred bytes per backend instead of the CPU and garbage of a
// render at every probe.
type renderMemo struct {
	inputs                    string
	configMapName, secretName string
	configMapHash, secretHash string
}

// renderMemos are the memos of a reconciler's backends.
type renderMemos struct {
	mu    sync.Mutex
	memos map[writerKey]renderMemo
}

func newRenderMemos() *renderMemos { return &renderMemos{memos: map[writerKey]renderMemo{}} }

// get returns writer's memo.
func (m *renderMemos) get(writer writerKey) (renderMemo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	memo, ok := m.memos[writer]
	return memo, ok
}

// set records writer's memo.
func (m *renderMemos) set(writer writerKey, memo renderMemo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.memos[writer] = memo
}

// forget drops writer's memo: it is gone, or its last render did not
// complete.
func (m *renderMemos) forget(writer writerKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.memos, writer)
}

// asWritten reports whether the watched metadata shows the kind object
// name of writer (whose UID is owner) as the operator last wrote or
// checked it: controlled by the owner, at the recorded version, with
// content hash hash.
func (w ownedWriter) asWritten(ctx context.Context, writer writerKey, owner types.UID, kind, name, hash string) bool {
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind}}
	if err := w.metadata.Get(ctx, types.NamespacedName{Namespace: writer.Namespace, Name: name}, meta); err != nil {
		return false
	}
	return asLeft(meta, owner, w.versions.get(writer, writtenKey{kind: kind, name: name}), hash)
}
