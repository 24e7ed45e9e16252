print("spout")
