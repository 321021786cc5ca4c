terraform {
  backend "http" {
    address      = "https://state.example.com/state/app"
    lock_address = "https://state.example.com/state/app/lock"
    lock_method  = "POST"
  }
}
