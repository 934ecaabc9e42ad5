"""Word lists the generator draws from: states, name parts, cuisines, rules and room types."""

from __future__ import annotations

# --- geography ---------------------------------------------------------------------------------

# name, abbreviation, centroid latitude, centroid longitude, spread of its cities (km)
STATES: tuple[tuple[str, str, float, float, float], ...] = (
    ("Alabama", "AL", 32.8, -86.8, 90), ("Arizona", "AZ", 34.3, -111.7, 160),
    ("Arkansas", "AR", 34.9, -92.4, 90), ("California", "CA", 37.2, -119.5, 220),
    ("Colorado", "CO", 39.0, -105.5, 150), ("Connecticut", "CT", 41.6, -72.7, 30),
    ("Delaware", "DE", 39.0, -75.5, 25), ("Florida", "FL", 28.6, -82.4, 130),
    ("Georgia", "GA", 32.7, -83.4, 110), ("Idaho", "ID", 44.4, -114.6, 150),
    ("Illinois", "IL", 40.0, -89.2, 110), ("Indiana", "IN", 39.9, -86.3, 70),
    ("Iowa", "IA", 42.1, -93.5, 100), ("Kansas", "KS", 38.5, -98.4, 130),
    ("Kentucky", "KY", 37.5, -85.3, 100), ("Louisiana", "LA", 31.1, -92.0, 90),
    ("Maine", "ME", 45.4, -69.2, 90), ("Maryland", "MD", 39.0, -76.8, 50),
    ("Massachusetts", "MA", 42.3, -71.8, 45), ("Michigan", "MI", 44.3, -85.4, 130),
    ("Minnesota", "MN", 46.3, -94.3, 140), ("Mississippi", "MS", 32.7, -89.7, 90),
    ("Missouri", "MO", 38.4, -92.5, 110), ("Montana", "MT", 47.0, -109.6, 200),
    ("Nebraska", "NE", 41.5, -99.8, 130), ("Nevada", "NV", 39.3, -116.6, 160),
    ("New Hampshire", "NH", 43.7, -71.6, 40), ("New Jersey", "NJ", 40.2, -74.7, 40),
    ("New Mexico", "NM", 34.4, -106.1, 160), ("New York", "NY", 42.9, -75.5, 110),
    ("North Carolina", "NC", 35.6, -79.4, 110), ("North Dakota", "ND", 47.5, -100.5, 130),
    ("Ohio", "OH", 40.3, -82.8, 80), ("Oklahoma", "OK", 35.6, -97.5, 120),
    ("Oregon", "OR", 43.9, -120.6, 150), ("Pennsylvania", "PA", 40.9, -77.8, 100),
    ("Rhode Island", "RI", 41.7, -71.5, 15), ("South Carolina", "SC", 33.9, -80.9, 80),
    ("South Dakota", "SD", 44.4, -100.2, 130), ("Tennessee", "TN", 35.9, -86.4, 110),
    ("Texas", "TX", 31.5, -99.3, 250), ("Utah", "UT", 39.3, -111.7, 140),
    ("Vermont", "VT", 44.1, -72.7, 40), ("Virginia", "VA", 37.5, -78.9, 100),
    ("Washington", "WA", 47.4, -120.5, 130), ("West Virginia", "WV", 38.6, -80.6, 60),
    ("Wisconsin", "WI", 44.6, -89.9, 110), ("Wyoming", "WY", 43.0, -107.6, 150),
)

# --- city names --------------------------------------------------------------------------------

CITY_STEMS = (
    "Ash", "Bell", "Birch", "Black", "Bright", "Brook", "Cedar", "Clear", "Cliff", "Clover",
    "Copper", "Crest", "Deer", "Dover", "Eagle", "Elm", "Fair", "Fern", "Fox", "Glen", "Gold",
    "Granite", "Green", "Hart", "Hazel", "Holly", "Iron", "Juniper", "Kings", "Laurel", "Lin",
    "Maple", "Marble", "Meadow", "Mill", "Orchard", "Pine", "Plain", "Quarry", "Raven", "Red",
    "Ridge", "Rock", "Rose", "Sage", "Salt", "Shady", "Silver", "Spring", "Stone", "Summer",
    "Thorn", "Timber", "Trout", "Walnut", "White", "Willow", "Wind", "Winter", "Wolf", "Alder",
    "Amber", "Beacon", "Bramble", "Carver", "Dun", "Everett", "Hollis", "Kendal", "Lang", "Mar",
    "Nor", "Oak", "Pell", "Quincy", "Ross", "Stan", "Thurs", "Wes", "Yar",
)
CITY_ENDINGS = (
    "ville", "ton", "field", "ford", "burg", "port", "dale", "wood", "view", "ridge", "haven",
    "land", "mont", "brook", "crest", "water", "bury", "stead", "wick", "ham", "more", "well",
    "gate", "worth", "by",
)
CITY_FORMS = ("{}", "{}", "{}", "{}", "{}", "{} Falls", "{} Springs", "Port {}", "Lake {}",
              "Mount {}", "{} City", "{} Junction", "{} Heights", "Fort {}", "{} Harbor")

# --- restaurants -------------------------------------------------------------------------------

COMMON_CUISINES = ("Tea", "BBQ", "Seafood", "Cafe", "Desserts", "Pizza", "Fast Food", "Bakery")
QUERY_CUISINES = ("Mediterranean", "French", "Mexican", "Chinese", "Indian", "Italian", "American")
CUISINES = COMMON_CUISINES + QUERY_CUISINES

R_FIRST = (
    "Copper", "Golden", "Blue", "Silver", "Olive", "Saffron", "Juniper", "Harbor", "Maple",
    "Crimson", "Velvet", "Rustic", "Little", "Lucky", "Happy", "Green", "Wild", "Salty", "Smoky",
    "Sweet", "Spicy", "Urban", "Old", "Iron", "Stone", "Amber", "Jade", "Ruby", "Coral", "Sunny",
    "Midnight", "Morning", "Twin", "Hidden", "Humble", "Noble", "Royal", "Northern", "Southern",
    "Prairie", "Coastal", "Mountain", "Painted", "Dancing", "Laughing", "Sleepy", "Hungry",
)
R_SECOND = (
    "Kettle", "Lotus", "Heron", "Spoon", "Lantern", "Fig", "Ladle", "Pepper", "Basil", "Thyme",
    "Acorn", "Anchor", "Bamboo", "Barrel", "Biscuit", "Bluebird", "Bison", "Cactus", "Cherry",
    "Chestnut", "Cinnamon", "Compass", "Cricket", "Crow", "Dragon", "Ember", "Falcon", "Firefly",
    "Ginger", "Goose", "Harvest", "Hearth", "Honey", "Kiln", "Lemon", "Lily", "Magpie", "Mango",
    "Mesa", "Mint", "Mulberry", "Nutmeg", "Orchid", "Otter", "Owl", "Peach", "Pelican", "Plum",
    "Poppy", "Quail", "Robin", "Rooster", "Sparrow", "Spruce", "Sunflower", "Tiger", "Tulip", "Wren",
)
R_KIND = (
    "Kitchen", "Cafe", "Bistro", "Grill", "Eatery", "Diner", "House", "Tavern", "Canteen",
    "Brasserie", "Noodle Bar", "Taqueria", "Trattoria", "Bakery", "Smokehouse", "Deli",
    "Tea Room", "Pizzeria", "Dumpling House", "Curry House", "Oyster Bar", "Creamery", "Cantina",
    "Steakhouse", "Chophouse", "Supper Club", "Food Hall", "Crepery",
)
R_PERSON = (
    "Rosa", "Marco", "Lena", "Omar", "Priya", "Chen", "Hugo", "Nina", "Sam", "Ivy", "Jules", "Kofi",
    "Mei", "Ravi", "Tomas", "Ada", "Felix", "Greta", "Luis", "Yuki", "Aunt Bea", "Uncle Joe",
    "Mama Lou", "Big Al", "Dottie", "Frankie", "Gus", "Hattie", "Lupe", "Nonna",
)

# --- accommodations ----------------------------------------------------------------------------

ROOM_TYPES = ("Entire home/apt", "Private room", "Shared room")
HOUSE_RULES = ("No smoking", "No parties", "No children under 10", "No visitors", "No pets")
H_ADJ = (
    "Cozy", "Sunny", "Bright", "Charming", "Spacious", "Modern", "Quiet", "Stylish", "Rustic",
    "Elegant", "Airy", "Peaceful", "Lovely", "Renovated", "Classic", "Chic", "Serene", "Comfy",
    "Secluded", "Historic", "Hidden", "Restful", "Inviting", "Warm", "Breezy", "Tranquil", "Sleek",
    "Homey", "Roomy", "Bohemian",
)
H_UNIT = {
    "Entire home/apt": ("Studio", "Loft", "Apartment", "Cottage", "Bungalow", "Townhouse",
                        "Guesthouse", "Cabin", "Flat", "Duplex", "Carriage House", "Garden Suite",
                        "Penthouse", "Farmhouse", "2BR Apartment", "3BR Home", "1BR Suite",
                        "4BR House"),
    "Private room": ("Private Room", "Bedroom", "Guest Room", "Room with Private Bath",
                     "Attic Room", "Queen Room", "King Room", "Garden Room"),
    "Shared room": ("Shared Room", "Bunk Bed", "Hostel Bed", "Shared Loft Space", "Shared Dorm"),
}
H_PLACE = (
    "near Downtown", "by the River", "on Main Street", "near the Park", "in the Old Town",
    "with Garden View", "close to the Museum District", "by the Lake", "near the University",
    "with Mountain View", "in a Quiet Neighborhood", "steps from the Square", "near the Harbor",
    "with Patio", "above the Bakery", "on Elm Avenue", "near the Station", "with Free Parking",
    "in the Arts District", "near the Trails",
)

# --- attractions -------------------------------------------------------------------------------

A_FIRST = (
    "Hawthorne", "Whitfield", "Carver", "Abernathy", "Beaumont", "Calloway", "Ellison",
    "Fairbanks", "Garrison", "Holloway", "Kensington", "Langford", "Merriweather", "Northrop",
    "Pemberton", "Quimby", "Redmond", "Sterling", "Thornbury", "Underwood", "Whitcomb",
    "Ashcroft", "Blackwood", "Coldwater", "Eagle Rock", "Falcon Ridge", "Heron Bay", "Juniper Hill",
    "Lone Pine", "Mill Creek", "Old Mill", "Pioneer", "Riverside", "Shadow Lake", "Silver Creek",
    "Sunset", "Twin Oaks", "Veterans", "Willow Creek", "Founders", "Liberty", "Heritage", "Union",
    "Centennial", "Bluebonnet", "Cottonwood", "Granite Peak", "Prospect Hill",
)
A_TYPE = (
    "Museum", "Park", "Botanical Garden", "Zoo", "Art Gallery", "Nature Preserve",
    "Science Center", "Aquarium", "Historic Site", "Heritage Center", "Sculpture Garden",
    "Lighthouse", "Observatory", "Memorial Park", "State Park", "Arboretum", "History Museum",
    "Children's Museum", "Trailhead", "Waterfront", "Public Library", "Theater", "Farmers Market",
    "Covered Bridge", "Conservatory", "Wildlife Refuge", "Railroad Museum", "Amphitheater",
)
STREETS = ("Main", "Oak", "Maple", "Cedar", "Park", "Lake", "Hill", "Lincoln", "River", "Elm",
           "Pine", "Church", "Market", "Mill", "Spring", "Union", "Ridge", "Sunset", "Highland",
           "Franklin", "Jefferson", "Walnut", "Chestnut", "Bridge")
STREET_KINDS = ("St", "Ave", "Blvd", "Rd", "Dr", "Ln", "Way", "Pkwy")
