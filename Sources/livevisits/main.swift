print("livevisits")
