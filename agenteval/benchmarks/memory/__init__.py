"""`agenteval memory`: does a memory keep up with one person over months of chats?"""
