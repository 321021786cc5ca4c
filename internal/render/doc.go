// Package render turns HttpBackend and CosBackend specs into what a runner
// pod needs to run `terraform init`: the backend configuration files (kept in
// a ConfigMap) and the credentials as environment variables (kept in a
// Secret, for envFrom).
//
// Three files are rendered for each backend, all carrying the same settings:
//
//   - backend.tf: `terraform { backend "<type>" { ... } }` in HCL, for a
//     working directory that holds it;
//   - backend.tf.json: the same in Terraform's JSON syntax;
//   - backend.tfbackend: the settings at top level, for
//     `terraform init -backend-config=backend.tfbackend` next to an empty
//     `terraform { backend "<type>" {} }` block.
//
// A runner mounts only the file it uses (a ConfigMap item, or subPath) into
// its root module: backend.tf and backend.tf.json side by side are a
// "Duplicate backend configuration" for terraform validate, plan and apply.
//
// Only the attributes a user set are written, plus the required ones; a value
// equal to Terraform's own default counts as unset (the API server fills in
// defaults, so the two cannot be told apart). Credentials never appear in
// the files: [HTTPCredentials] and [CosCredentials] map them to the
// environment variables Terraform reads.
//
// Values cannot escape their strings: HCL is written with hclwrite, which
// escapes quotes, control characters and the template introducers "${" and
// "%{"; JSON is written with encoding/json. Terraform decodes backend blocks
// without an evaluation context, so it reads JSON strings verbatim (no
// template interpolation) and the JSON file carries values unescaped.
//
// Every function is pure and deterministic: the same inputs give
// byte-identical files and equal objects, so a resync writes nothing.
package render
