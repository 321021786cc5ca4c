// Package stateencryption reads OpenTofu's encrypted state: the pbkdf2 key
// provider and the aes_gcm method, the only ones the operator renders.
//
// An encrypted state is an envelope (see statefile) of a serial and a
// lineage in clear text, a meta object holding each key provider's
// parameters under "key_provider.pbkdf2.<name>", and the payload: a
// 12-byte nonce followed by the AES-GCM ciphertext of the plain state,
// with no additional data. The key is PBKDF2 of the passphrase with the
// salt, iterations, hash function and key length of the meta.
//
// The operator names each key provider after the Secret reference of its
// passphrase (KeyProviderName), so a state written before a rotation is
// still found under the same meta key when the old reference moves into
// the fallback.
package stateencryption
