"""The loaded model: frozen dataclasses, the error family, and the ports (interfaces)
between the pure core and IO.
"""
