terraform {
  backend "http" {
    address                = "https://state.example.com/state/app"
    skip_cert_verification = true
  }
}
