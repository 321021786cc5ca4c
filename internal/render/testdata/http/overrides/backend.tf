terraform {
  backend "http" {
    address       = "https://state.example.com/state/app"
    update_method = "PATCH"
    future_string = "value"
    future_number = 1.5
    future_bool   = false
    future_null   = null
    future_list   = ["a", 1, true, null]
    future_object = {
      "$${k}" = "template key"
      a       = "nested"
      "a b"   = "quoted key"
      true    = "keyword key"
      z       = 1
    }

    future_block {
      inner = "created"
      other = 2
    }
  }
}
