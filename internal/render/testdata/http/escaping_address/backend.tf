terraform {
  backend "http" {
    address = "https://state.example.com/state/app?q=\"$${x}\"&r=%%{y}\\\n"
  }
}
