package related

import (
	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/types"

	"github.com/infrastate/backend-operator/internal/contenthash"
)

// packedUID is a UID as the API server makes them, a UUID in its
// canonical form, in 16 bytes rather than a string of 36: a held object
// keeps two (its own and its controller's). Any other UID is kept as it
// is.
type packedUID struct {
	uuid  [16]byte  // the UUID, zero when other holds the UID
	other types.UID // a UID that is not a canonical UUID, or ""
}

// packUID packs uid.
func packUID(uid types.UID) packedUID {
	u, err := uuid.Parse(string(uid))
	if err != nil || u == uuid.Nil || u.String() != string(uid) {
		return packedUID{other: uid}
	}
	return packedUID{uuid: u}
}

// unpack is the UID packed.
func (p packedUID) unpack() types.UID {
	if p.uuid == uuid.Nil {
		return p.other
	}
	return types.UID(uuid.UUID(p.uuid).String())
}

// packedHash is a content hash as the operator writes them, "sha256:" and
// 64 lowercase hex digits, in 32 bytes rather than a string of 71; any
// other value is kept as it is.
type packedHash struct {
	sum   contenthash.Digest // the hash, zero when other holds the value
	other string             // a value that is no such hash, or ""
}

// packHash packs a content hash annotation's value.
func packHash(value string) packedHash {
	sum, ok := contenthash.ParseHash(value)
	if !ok || sum == (contenthash.Digest{}) {
		return packedHash{other: value}
	}
	return packedHash{sum: sum}
}

// unpack is the value packed.
func (p packedHash) unpack() string {
	if p.sum == (contenthash.Digest{}) {
		return p.other
	}
	return p.sum.Hash()
}
