package v1alpha1

// EffectiveProbe is spec.probe with the deprecated spec.interval in place
// of an unset probe.interval, as the controller reads it; nil when neither
// is set. Admission refuses setting both. It does not change s.
func (s *RemoteStateSpec) EffectiveProbe() *ProbeSpec {
	if s.Interval == nil || (s.Probe != nil && s.Probe.Interval != nil) {
		return s.Probe
	}
	var p ProbeSpec
	if s.Probe != nil {
		p = *s.Probe
	}
	p.Interval = s.Interval
	return &p
}
