// Package related watches the Secrets and ConfigMaps related to the
// objects of the API (those they reference, and those they render), for
// metadata only, holds the contents the operator read of the referenced
// ones (one copy per version), and names them in the field index every
// kind keeps of its references. It knows no kind of the API but through
// the lists and constructors the setup gives it, and never imports the
// controllers.
package related
