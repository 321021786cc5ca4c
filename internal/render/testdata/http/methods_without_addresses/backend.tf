terraform {
  backend "http" {
    address = "https://state.example.com/state/app"
  }
}
