terraform {
  backend "http" {
    address       = "https://state.example.com/state/app"
    update_method = "PUT"
  }
}
