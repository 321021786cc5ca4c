terraform {
  backend "http" {
    address        = "https://state.example.com/state/app"
    unlock_address = "https://state.example.com/state/app/lock"
    unlock_method  = "DELETE"
  }
}
