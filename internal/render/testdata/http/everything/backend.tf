terraform {
  backend "http" {
    address                = "https://state.example.com/state/app"
    update_method          = "PUT"
    lock_address           = "https://state.example.com/state/app/lock"
    lock_method            = "POST"
    unlock_address         = "https://state.example.com/state/app/lock"
    unlock_method          = "DELETE"
    username               = "terraform"
    skip_cert_verification = true
    retry_max              = 5
    retry_wait_min         = 2
    retry_wait_max         = 60
    future_attribute       = "x"
  }
}
