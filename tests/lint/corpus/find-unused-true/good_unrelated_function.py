def configure(find_unused_parameters=True):
    return {"find_unused_parameters": find_unused_parameters}


settings = configure(find_unused_parameters=True)
